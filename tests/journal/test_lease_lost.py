"""A run whose lease another process takes over while one of its tools waits stops at
once: the heartbeat's refused renewal cancels its steps and fails it, on SQLite and on
PostgreSQL. (It was failed only at the run's next change, so a process that froze past
its lease and woke up went on with the run unseen, beside the one that had taken it.)
"""

from __future__ import annotations

import time

import anyio
import pytest

from regiment.errors import JournalError
from regiment.hierarchy import Event, RunFailed
from regiment.journal import open_journal
from tests.serve.teams import Stuck, stuck_team

from .test_crash_resume import where

pytestmark = pytest.mark.anyio

__all__ = ("where",)  # the fixture: SQLite and PostgreSQL

SCAN = "Please scan the warehouse for order 55001."
TTL = 1.0  # the owner renews every third of a second


async def take_over(where: str, owner: str = "elsewhere:4242:1", *, release: bool = False) -> str:
    """Take the journal's one run over as another process does once the lease has run
    out (this journal's clock is past every lease its owner took); the run's id.
    ``release``: then let it go, as a process that took it over only to write one thing
    (say, a decision) does."""
    thief = await open_journal(where, clock=lambda: time.time() + 3600)
    try:
        (info,) = await thief.list_runs()
        lease = await thief.acquire(info.run_id, owner=owner, ttl=3600)
        if release:
            await thief.release(lease)
    finally:
        await thief.close()
    return info.run_id


async def test_a_run_taken_over_while_its_tool_waits_stops_at_once(where: str) -> None:
    stuck = Stuck()
    failed: list[JournalError] = []
    async with stuck_team(stuck).start(journal=where, lease_ttl=TTL) as running:

        async def run() -> None:
            try:
                await running.run(SCAN)
            except JournalError as exc:
                failed.append(exc)

        async with anyio.create_task_group() as tg:
            tg.start_soon(run)
            await stuck.started.wait()  # the tool waits, and will wait for ever
            run_id = await take_over(where, owner="thief")
        # The task group has ended: run() returned, its lease's next renewal refused.
        await stuck.cancelled.wait()  # and the run cancelled its step's tool (the team is up)
    (error,) = failed
    assert "was taken over by another process" in str(error)
    assert "the new owner finishes it" in str(error)
    journal = await open_journal(where)
    try:
        assert (await journal.get_run(run_id)).status == "running"  # the thief's now
    finally:
        await journal.close()


async def test_a_taken_over_runs_stream_ends_saying_so_and_by_whom(where: str) -> None:
    stuck = Stuck()
    events: list[Event] = []
    async with stuck_team(stuck).start(journal=where, lease_ttl=TTL) as running:

        async def follow() -> None:
            with pytest.raises(JournalError, match="was taken over by another process"):
                async with running.stream(SCAN) as stream:
                    events.extend([event async for event in stream])

        async with anyio.create_task_group() as tg:
            tg.start_soon(follow)
            await stuck.started.wait()
            run_id = await take_over(where)
    # It said "RunError: the run's planner failed while handling CancelRun: LeaseLost: ...".
    last = events[-1]
    assert isinstance(last, RunFailed)
    assert last.error_type == "LeaseLost"
    assert last.message.startswith(
        f"run {run_id} was taken over by another process, pid 4242 on elsewhere"
    )
    assert "the new owner finishes it" in last.message
