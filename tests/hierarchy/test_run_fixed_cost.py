"""What every run pays whatever its length (issue #22): no cancel scope made through
anyio's backend look-up, and no generator-based context manager of ours, on the way
from ``run(goal)`` to its result.

Counted by the interpreter's profiler over one run of a started team (after a
first run has warmed it up), so the counts are exact on either backend.
"""

from __future__ import annotations

import contextlib
from types import CodeType, FrameType

import anyio
import pytest

from regiment.actors import ActorRef
from regiment.hierarchy import Planner, Team, Worker
from regiment.hierarchy.guard._roles import RoleGuards
from regiment.hierarchy.run._actor import PlannerActor
from regiment.hierarchy.workers._step_jobs import StepTimer
from regiment.models import ModelResponse, ScriptedModel, Usage
from regiment.telemetry._record import SpanRecorder

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


def _calls_of(code: CodeType) -> Matches:
    """Matches the calls of ``code`` (not the builtins it calls)."""
    return lambda frame, event, _: event == "call" and frame.f_code is code


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


async def test_a_run_makes_one_cancel_scope_per_planner_call_and_none_at_its_end() -> None:
    # A 1-step run: its plan call and its synthesis call. Its end makes no shield: the
    # run is done, with no journal to close, and its planner actor is still dormant, so
    # stopping it (its on_stop in this task) waits for nothing a cancel could cut (a
    # scope costs ~250 opcodes made, entered, left). A run that is not done, journaled,
    # or whose planner has a task of its own still ends inside one.
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

    assert await _calls_in_one_run(on_the_runs_path) == 2


async def test_a_run_reads_its_guard_chains_as_the_team_found_them() -> None:
    # The synthesis asks whether any guard judges the answer: from the chains the team
    # found once, not by building the chain again (a tuple and a generator each run).
    chain = RoleGuards.of.__code__
    assert await _calls_in_one_run(lambda frame, event, _: frame.f_code is chain) == 0


async def test_a_run_makes_its_messages_and_phases_without_frozen_dataclasses() -> None:
    # A frozen dataclass's __init__ is Python that sets each field through
    # object.__setattr__ (~8 opcodes and a C call a field); a frozen msgspec Struct is
    # made in C. A 1-step run made 14 (its two model replies and their span facts, the
    # run's spawn order, its phases, its plan attempt, its calls).
    def frozen_dataclass_made(frame: FrameType, event: str, _: object) -> bool:
        if event != "call" or frame.f_code.co_name != "__init__":
            return False
        params = getattr(type(frame.f_locals.get("self")), "__dataclass_params__", None)
        return params is not None and params.frozen

    assert await _calls_in_one_run(frozen_dataclass_made) == 0


async def test_a_run_without_a_journal_starts_its_planner_without_a_checkpoint() -> None:
    # Its planner actor was spawned a moment ago, in this task: its mailbox has room,
    # and nothing waited since the start slot's checkpoint (only a journaled run's
    # record is written, shielded, in between: that run checks for a cancel first).
    send = ActorRef.send.__code__
    assert await _calls_in_one_run(_calls_of(send)) == 0


async def test_an_untraced_run_records_no_end_on_its_span() -> None:
    # The run's root span does not record: its end's status and counts are not worked out.
    run_end = SpanRecorder.run_end.__code__
    assert await _calls_in_one_run(_calls_of(run_end)) == 0


async def test_an_untraced_runs_planner_calls_share_one_null_context() -> None:
    # Each planner-side call enters the run span's context: with no run span, one
    # shared null context, not one made per call.
    made = contextlib.nullcontext.__init__.__code__
    assert await _calls_in_one_run(_calls_of(made)) == 0


async def test_the_planner_reads_a_plan_replys_text_once() -> None:
    # The planner's turn on a reply read its text before its arm, for every reply: a
    # plan's text was then read again by the plan reader. It reads it in the arms that
    # use it: of a 1-step run's two replies, only the synthesis' (its answer).
    text = vars(ModelResponse)["text"].fget.__code__
    on_reply = PlannerActor._on_model_reply.__code__

    def read_on_reply(frame: FrameType, event: str, _: object) -> bool:
        if event != "call" or frame.f_code is not text:
            return False
        return frame.f_back is not None and frame.f_back.f_code is on_reply

    assert await _calls_in_one_run(read_on_reply) == 1


async def test_a_runs_result_adds_up_its_usage_without_adding_usages() -> None:
    # RunResult.usage: the roles' counts summed column by column, not a Usage made
    # and added per role (three a 1-step run: planner, worker, synthesizer).
    add = Usage.__add__.__code__
    assert await _calls_in_one_run(_calls_of(add)) == 0
