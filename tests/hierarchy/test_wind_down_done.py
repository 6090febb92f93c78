"""A step that finishes its work while its run winds down is kept, and nothing follows.

A run ending early (a step failed with no replan left, the caller left) cancels
the steps in flight; one whose work was already done (here: its model's answer
came from a call that did not let the cancel in) reports ``done``. Its side
effects happened, so the run's result has its report, commits it and counts what
it spent; a reader still there gets its ``StepCompleted``. It starts no new step
and no replan.
"""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from regiment.errors import ModelAPIError
from regiment.hierarchy import (
    Budget,
    JournaledEvents,
    Planner,
    RunCompleted,
    RunFailed,
    StepCompleted,
    StepDispatched,
    Team,
    Worker,
)
from regiment.hierarchy.events import Event
from regiment.journal import SqliteJournal
from regiment.models import (
    ModelRequest,
    ModelResponse,
    ScriptedModel,
    ToolResultPart,
    Usage,
    text_response,
)

from .brains import Brain, left_early, plan_json

pytestmark = pytest.mark.anyio

FINISHED = Usage(input_tokens=700, output_tokens=70)  # what the late step's answer spent


class LateFinish:
    """Worker script: 'hang' waits until cancelled, and its cancel lets 'finish' answer;
    'finish' waits (shielded) for that, so it answers while its run winds down;
    'break' fails once the other two are in flight."""

    def __init__(self) -> None:
        self.in_flight = 0
        self.both_in = anyio.Event()
        self.hang_cancelled = anyio.Event()

    def _entered(self) -> None:
        self.in_flight += 1
        if self.in_flight == 2:
            self.both_in.set()

    async def work(
        self, description: str, results: list[ToolResultPart], request: ModelRequest
    ) -> ModelResponse | str:
        if description == "hang":
            self._entered()
            try:
                await anyio.sleep_forever()
            finally:
                self.hang_cancelled.set()
        if description == "finish":
            self._entered()
            with anyio.CancelScope(shield=True):  # the work is done whatever the cancel
                await self.hang_cancelled.wait()
            return text_response("finished: the side effect happened", usage=FINISHED)
        await self.both_in.wait()
        raise ModelAPIError("upstream broke", status_code=500)


def _team(late: LateFinish, *steps: str) -> Team:
    plan = plan_json(*({"description": s, "worker": "w"} for s in steps))
    model = ScriptedModel(Brain([plan], work=late.work))
    worker = Worker(name="w", description="Works.", model=model, cancel_grace=None)
    return Team(name="t", planner=Planner(model=model), workers=[worker], budget=Budget(replans=0))


def _completed(events: list[Event]) -> list[str]:
    return [e.step_id for e in events if isinstance(e, StepCompleted)]


async def test_a_step_done_as_a_failed_run_winds_down_is_in_its_result() -> None:
    late = LateFinish()
    team = _team(late, "hang", "finish", "break")
    async with team.start() as running, running.stream("goal") as stream:
        events = [event async for event in stream]
    failed = events[-1]
    assert isinstance(failed, RunFailed)
    assert "no replans left" in failed.message  # the failure stands: no replan was asked
    assert sorted((r.step_id, r.status) for r in failed.steps) == [
        ("s1", "cancelled"),
        ("s2", "done"),
        ("s3", "failed"),
    ]
    assert failed.committed == ("s2",)
    assert _completed(events) == ["s2"]
    assert failed.usage.input_tokens >= FINISHED.input_tokens
    assert len([e for e in events if isinstance(e, StepDispatched)]) == 3  # nothing new
    assert [p.version for p in failed.plans] == [1]


async def test_a_step_done_as_its_caller_left_is_in_the_journaled_result(
    tmp_path: Path,
) -> None:
    late = LateFinish()
    journal = await SqliteJournal.open(tmp_path / "runs.db")
    async with journal, _team(late, "hang", "finish").start(journal=journal) as running:
        events = await left_early(running, journal, "goal", late.both_in)
    ended = events[-1]
    assert isinstance(ended, RunCompleted)
    result = ended.result
    assert result.status == "cancelled"
    assert sorted((r.step_id, r.status) for r in result.steps) == [
        ("s1", "cancelled"),
        ("s2", "done"),
    ]
    assert result.committed == ("s2",)
    assert result.usage.input_tokens >= FINISHED.input_tokens
    assert _completed(events) == []  # quiet, as the cancelled step is: no reader is there


async def test_a_run_whose_caller_left_winds_down_before_run_returns(tmp_path: Path) -> None:
    """``run()`` makes no events stream (nobody reads it): its caller, cancelled, still
    waits for the run's wind-down, so the journal holds its cancelled end, with the step
    that finished meanwhile, as soon as ``run()`` has returned."""
    late = LateFinish()
    journal = await SqliteJournal.open(tmp_path / "runs.db")
    async with journal, _team(late, "hang", "finish").start(journal=journal) as running:
        async with anyio.create_task_group() as tg:

            async def leave_when_busy() -> None:
                await late.both_in.wait()
                tg.cancel_scope.cancel()

            tg.start_soon(leave_when_busy)
            await running.run("goal")
        (listed,) = await journal.list_runs()
        assert listed.status == "cancelled"
        events = (await JournaledEvents.read(journal, listed.run_id)).events
    ended = events[-1]
    assert isinstance(ended, RunCompleted)
    assert sorted((r.step_id, r.status) for r in ended.result.steps) == [
        ("s1", "cancelled"),
        ("s2", "done"),
    ]
    assert ended.result.committed == ("s2",)
