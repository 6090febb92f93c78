"""What every run pays whatever its length (issue #22): no cancel scope made through
anyio's backend look-up, and no generator-based context manager of ours, on the way
from ``run(goal)`` to its result.

Counted by the interpreter's profiler over one run of a started team (after a
first run has warmed it up), so the counts are exact on either backend.
"""

from __future__ import annotations

import contextlib
from types import FrameType

import anyio
import pytest

from regiment.hierarchy import Planner, Team, Worker
from regiment.hierarchy.guard._roles import RoleGuards
from regiment.hierarchy.workers._step_jobs import StepTimer
from regiment.models import ScriptedModel

from .brains import Brain, plan_json
from .profiled import CallCounter, Matches

pytestmark = pytest.mark.anyio


def _team() -> Team:
    model = ScriptedModel(Brain([plan_json({"description": "one"})] * 2))
    return Team(
        name="fixed",
        planner=Planner(model=model),
        workers=[Worker(name="w", description="does steps", model=model)],
    )


async def _calls_in_one_run(matches: Matches) -> int:
    """How many Python calls that ``matches`` accepts one 1-step run makes."""
    counter = CallCounter(matches)
    async with _team().start() as running:
        assert (await running.run("warm up")).status == "completed"
        with counter:
            result = await running.run("do it")
    assert result.status == "completed"
    return counter.count


async def test_a_run_makes_its_cancel_scopes_without_a_backend_lookup() -> None:
    # anyio.CancelScope() finds the running backend on every call: the run's model
    # calls and its end make their scopes from the class the actor system found once.
    lookup = anyio.CancelScope.__new__.__code__
    counter = CallCounter(lambda frame, event, _: event == "call" and frame.f_code is lookup)
    with counter:
        anyio.CancelScope()
    assert counter.count == 1  # what is counted is what anyio.CancelScope() calls
    assert await _calls_in_one_run(counter.matches) == 0


async def test_a_run_enters_no_generator_based_context_manager_of_ours() -> None:
    # A @contextmanager costs a generator and three calls more than a class: the
    # planner's model calls hold the guards' purse with a class. (trio's own cancel
    # scopes use some: only regiment's count.)
    made = contextlib._GeneratorContextManager.__init__.__code__

    def ours(frame: FrameType, event: str, _: object) -> bool:
        if event != "call" or frame.f_code is not made:
            return False
        manager, func = frame.f_locals.get("self"), frame.f_locals.get("func")
        return type(manager) is contextlib._GeneratorContextManager and getattr(
            func, "__module__", ""
        ).startswith("regiment.")

    assert await _calls_in_one_run(ours) == 0


async def test_a_run_makes_one_cancel_scope_per_planner_call_and_one_at_its_end() -> None:
    # A 1-step run: its plan call and its synthesis call, and the shield its end
    # closes the run in. The planner actor, stopped dormant inside that shield, makes
    # no second one around its on_stop (each costs ~250 opcodes made, entered, left).
    # Not counted: the worker's step-deadline watch, a task started once by the
    # worker's first step, makes one a wake-up, whenever the backend first runs it.
    made = type(anyio.CancelScope()).__init__.__code__
    watch = StepTimer._watch.__code__

    def on_the_runs_path(frame: FrameType, event: str, _: object) -> bool:
        caller = frame.f_back
        return (
            event == "call"
            and frame.f_code is made
            and (caller is None or caller.f_code is not watch)
        )

    assert await _calls_in_one_run(on_the_runs_path) == 3


async def test_a_run_reads_its_guard_chains_as_the_team_found_them() -> None:
    # The synthesis asks whether any guard judges the answer: from the chains the team
    # found once, not by building the chain again (a tuple and a generator each run).
    chain = RoleGuards.of.__code__
    assert await _calls_in_one_run(lambda frame, event, _: frame.f_code is chain) == 0


async def test_a_run_makes_its_messages_and_phases_without_frozen_dataclasses() -> None:
    # A frozen dataclass's __init__ is Python that sets each field through
    # object.__setattr__ (~8 opcodes and a C call a field); a frozen msgspec Struct is
    # made in C. A 1-step run made 16 (its two model replies and their span facts, the
    # run's spawn order, its phases, its plan attempt, its calls).
    def frozen_dataclass_made(frame: FrameType, event: str, _: object) -> bool:
        if event != "call" or frame.f_code.co_name != "__init__":
            return False
        params = getattr(type(frame.f_locals.get("self")), "__dataclass_params__", None)
        return params is not None and params.frozen

    assert await _calls_in_one_run(frozen_dataclass_made) == 0

