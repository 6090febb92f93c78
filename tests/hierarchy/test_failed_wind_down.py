"""A run that ends early winds down the same way whatever ended it.

A step that fails with no replan left, a worker's model that refuses for good, a
caller that leaves (and a budget that runs out, which always wound down): the
sibling steps in flight are cancelled, and the run ends only once they have
reported, so their reports and what they spent are in what the run ends with (a
failed run's ``RunFailed`` carries its plans, step reports and usage). Each is a
``StepErrored`` (status ``cancelled``) for a reader still there: not when the
caller left.
"""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from regiment.errors import ModelAPIError
from regiment.hierarchy import (
    Budget,
    RunCompleted,
    RunFailed,
    StepErrored,
)
from regiment.hierarchy.events import Event
from regiment.journal import Lease, MemoryJournal, SqliteJournal

from .brains import SPENT, Siblings, left_early, siblings_team

pytestmark = pytest.mark.anyio


def _cancelled_siblings(events: list[Event]) -> list[tuple[str, str]]:
    return sorted(
        (e.step_id, e.status)
        for e in events
        if isinstance(e, StepErrored) and e.step_id in ("s2", "s3")
    )


@pytest.mark.parametrize(
    ("error", "fatal"),
    [
        (ModelAPIError("upstream broke", status_code=500), False),  # no replans left
        (ModelAPIError("bad key", status_code=401), True),  # no replan can fix it
    ],
)
async def test_a_failed_run_waits_for_its_cancelled_siblings(
    error: ModelAPIError, fatal: bool
) -> None:
    siblings = Siblings(error)
    team = siblings_team(siblings, Budget(replans=0))
    async with team.start() as running, running.stream("Break and wait") as stream:
        events = [event async for event in stream]
    failed = events[-1]
    assert isinstance(failed, RunFailed)
    assert failed.error_type == "StepFailed"
    assert ("no replans left" in failed.message) is not fatal
    assert _cancelled_siblings(events) == [("s2", "cancelled"), ("s3", "cancelled")]
    assert [p.version for p in failed.plans] == [1]
    assert sorted((r.step_id, r.status) for r in failed.steps) == [
        ("s1", "failed"),
        ("s2", "cancelled"),
        ("s3", "cancelled"),
    ]
    assert failed.committed == ()
    assert failed.usage.input_tokens >= 2 * SPENT.input_tokens  # the siblings' spend
    assert failed.model_calls >= 3  # the plan, and one call of each sibling


async def test_a_run_its_caller_left_has_its_cancelled_steps_in_its_result(
    tmp_path: Path,
) -> None:
    # The reader has left, so the steps cancelled with the run get no event (the
    # service numbers a cancelled run's events as its stream ended); its result,
    # journaled, has their reports and what they spent.
    siblings = Siblings(None)
    journal = await SqliteJournal.open(tmp_path / "runs.db")
    async with journal, siblings_team(siblings, Budget()).start(journal=journal) as running:
        events = await left_early(running, journal, "Break and wait", siblings.both_wait)
    ended = events[-1]
    assert isinstance(ended, RunCompleted)
    assert ended.result.status == "cancelled"
    assert _cancelled_siblings(events) == []
    assert sorted((r.step_id, r.status) for r in ended.result.steps) == [
        ("s1", "cancelled"),
        ("s2", "cancelled"),
        ("s3", "cancelled"),
    ]
    assert ended.result.usage.input_tokens >= 2 * SPENT.input_tokens


class _HostGone(MemoryJournal):  # type: ignore[misc]  # (final: a test-only double)
    """A journal of one's own whose heartbeat raises what is no ``JournalError`` (its
    host went away) once ``ready`` is set: a task of the planner's own fails."""

    def __init__(self, ready: anyio.Event) -> None:
        super().__init__()
        self._ready = ready

    async def renew(self, lease: Lease, *, ttl: float) -> Lease:
        await self._ready.wait()
        raise ConnectionError("the journal's host went away")


async def test_a_planner_that_crashes_fails_its_run_with_what_it_got_to() -> None:
    # The run read as cancelled ("the planner stopped ... (the team stopped)") while the
    # team went on, and its steps in flight went on working for a run that was over.
    siblings = Siblings(None)  # s1 and the waits: all in flight when the heartbeat fails
    team = siblings_team(siblings, Budget())
    journal = _HostGone(siblings.both_wait)
    async with team.start(journal=journal, lease_ttl=0.3) as running:
        async with running.stream("Crash") as stream:
            events = [event async for event in stream]
        failed = events[-1]
        assert isinstance(failed, RunFailed)
        assert failed.error_type == "RunError"
        assert failed.message == (
            "the run's planner crashed: ConnectionError: the journal's host went away"
        )
        assert [plan.version for plan in failed.plans] == [1]  # what it got to
        assert failed.model_calls >= 1
        assert failed.usage.input_tokens > 0
        await siblings.both_stopped.wait()  # its steps were cancelled, the team still up
