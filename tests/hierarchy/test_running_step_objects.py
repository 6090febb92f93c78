"""What a running step holds that the garbage collector tracks (issue #22, row 4).

In a wide fan-out every running step's objects are alive at once, and the collector
runs each time 700 more are alive than at its last run: each object a step holds
brings a collection, which stops the event loop, nearer to the run's wall. A running
step's progress holds no list until it keeps a tool call's outcome or a guard's note;
its worker keeps it with no key tuple; its loop holds no tuple of what it began with
and no bound method of its model caller. Counted exactly, the collector held off, as
every step of a fan-out waits in its model call; what the lists held still reaches
the reports (the tests at the end)."""

from __future__ import annotations

import dataclasses
import gc
import types
from collections.abc import Callable

import anyio
import pytest
from opentelemetry.trace import NoOpTracerProvider

from regiment.hierarchy import Planner, Team, Worker
from regiment.hierarchy._model_call import ModelCaller
from regiment.hierarchy.guard import Outcome, Rewrite, ToolCallSubject
from regiment.hierarchy.workers._progress import StepProgress
from regiment.models import ModelRequest, ScriptedModel, tool_call_response
from regiment.telemetry import Telemetry
from regiment.tools import tool

from .brains import plan_json

pytestmark = pytest.mark.anyio

_ASYNCIO_ONLY = pytest.mark.parametrize("anyio_backend", ["asyncio"])


class _Together:
    """A model for a fan-out of ``width`` independent steps whose worker calls wait until
    all of them have started; ``seen`` runs as the last one starts (all are running),
    once ``again()`` has readied it for the next run."""

    def __init__(self, width: int, seen: Callable[[], None]) -> None:
        self.width, self.seen = width, seen
        self.started = 0
        self.all_in = anyio.Event()
        self.looking = False

    def again(self) -> None:
        self.started, self.all_in, self.looking = 0, anyio.Event(), True

    async def __call__(self, request: ModelRequest) -> str:
        if request.role == "planner":
            steps = [{"id": f"s{i}", "description": f"part {i}"} for i in range(self.width)]
            return plan_json(*steps)
        if request.role != "worker":
            return "all parts done"
        self.started += 1
        if self.started == self.width:
            if self.looking:
                self.seen()
            self.all_in.set()
        await self.all_in.wait()
        return "done"


async def _while_all_run(width: int, seen: Callable[[], None]) -> None:
    """Run a warmed-up team's fan-out of ``width`` steps, calling ``seen`` (the collector
    held off from the run's start) as every step waits in its model call."""
    together = _Together(width, seen)
    model = ScriptedModel(together)
    worker = Worker(name="w", description="does parts", model=model, max_concurrent_steps=width)
    planner = Planner(model=model, max_steps=width)
    # Untraced whatever provider an earlier test of the process installed globally (a
    # traced step keeps a bound method of its model caller: another object a step).
    untraced = Telemetry(tracer_provider=NoOpTracerProvider())
    team = Team(
        name="wide", planner=planner, workers=[worker], concurrency=width, telemetry=untraced
    )
    async with team.start() as running:
        assert (await running.run("warm up")).status == "completed"
        together.again()
        gc.collect()
        gc.disable()
        try:
            result = await running.run("do the parts at once")
        finally:
            gc.enable()
    assert result.status == "completed", result.status
    assert len(result.steps) == width


async def _tracked_made(width: int) -> int:
    """The tracked objects the run made and holds as all ``width`` steps run (the
    collector, held off since the run began, has moved none out of its youngest
    generation). The fewest of three runs: a thread an earlier test left in the process
    (a pool's, an exporter's) can only add objects to a count, never take them away."""
    counts: list[int] = []
    for _ in range(3):
        await _while_all_run(width, lambda: counts.append(len(gc.get_objects(0))))
    return min(counts)


@_ASYNCIO_ONLY
async def test_a_running_step_holds_fewer_tracked_objects() -> None:
    # Those of 24 steps less those of 8 (what a run holds whatever its width cancels
    # out), a step: 27 on main (the model's and the test's own included); two empty
    # lists, a key tuple, the loop's tuple and a bound method of those are cut.
    wide, narrow = await _tracked_made(24), await _tracked_made(8)
    assert (wide - narrow) / 16 <= 22


async def _running_objects() -> list[object]:
    found: list[object] = []
    await _while_all_run(6, lambda: found.extend(gc.get_objects()))
    return found


async def test_a_running_step_s_progress_holds_no_list_but_its_conversation() -> None:
    found = await _running_objects()
    progresses = [o for o in found if type(o) is StepProgress]
    assert len(progresses) == 6  # (the warm-up run's are gone)
    for progress in progresses:  # on main: its conversation and two empty lists
        lists = [o for o in gc.get_referents(progress) if type(o) is list]
        assert lists == [progress.messages]


async def test_a_running_step_holds_no_bound_method_of_its_model_caller() -> None:
    found = await _running_objects()
    bound = [
        o for o in found if isinstance(o, types.MethodType) and isinstance(o.__self__, ModelCaller)
    ]
    assert bound == []  # 6 on main: each step's ModelCaller.traced


async def test_a_running_step_s_loop_holds_no_tuple_of_what_it_began_with() -> None:
    found = await _running_objects()
    began = [o for o in found if type(o) is tuple and len(o) == 4 and type(o[1]) is StepProgress]
    assert began == []  # 6 on main: (assign, progress, worker, max_iterations)


@tool
def look(thing: str) -> str:
    """Look at a thing."""
    return f"saw {thing}"


def _at_the_sea(subject: ToolCallSubject) -> Outcome:
    return Rewrite(dataclasses.replace(subject, arguments={"thing": "the sea"}))


async def test_a_step_s_tool_outcomes_and_guard_notes_still_reach_its_report() -> None:
    model = ScriptedModel(
        [
            plan_json({"id": "s1", "description": "look"}),
            tool_call_response("look", {"thing": "the sky"}),
            "the sky is blue",
            "it is blue",
        ]
    )
    worker = Worker(
        name="w", description="looks", model=model, tools=[look], guardrails=[_at_the_sea]
    )
    team = Team(name="looking", planner=Planner(model=model), workers=[worker])
    async with team.start() as running:
        result = await running.run("look at the sky")
    assert result.status == "completed", result.status
    (report,) = result.steps
    assert [(o.tool, o.content) for o in report.tool_outcomes] == [("look", "saw the sea")]
    assert [(n.guardrail, n.outcome) for n in report.guardrails] == [("_at_the_sea", "rewrote")]
