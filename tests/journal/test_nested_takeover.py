"""A run whose nested team's run is in progress, taken over from a frozen owner.

The durable team's child process (the office, the billing desk nested in it) stops
inside the nested run's second tool call, on a real SQLite file or PostgreSQL server,
and is frozen (SIGSTOP). Another process takes the run over (``take_over``); this one
resumes it and finishes the nested run where it stopped: its first step is not done
again, the call in flight runs again with the same idempotency key, nothing runs under
another key.

Two ways this went wrong, the nested run's lease being left to the old owner:

- The old owner, woken up (SIGCONT), cancelled its nested run at its next heartbeat and
  journaled it ``cancelled``: the resume got a cancelled report for the step, and the
  office's replan charged every account again, under new keys.
- With the old owner still frozen, the resume waited for the nested run's lease (twice
  its own lease time), then failed the step with ``LeaseHeld``: the same replan.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

import anyio
import pytest

from regiment.hierarchy import RunResult
from regiment.journal import RunFinished, nested_run_id, open_journal

from .durable_team import Ledger, make_office
from .test_crash_resume import stopped_child, where
from .test_lease_lost import take_over

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(sys.platform == "win32", reason="signals need POSIX"),
]

__all__ = ("where",)  # the fixture: SQLite and PostgreSQL


async def _resume(where: str, run_id: str, folder: Path, *, ahead: float = 0.0) -> RunResult:
    """Resume the run here (``ahead``: seconds this journal's clock runs ahead, past the
    lease of the process that took it over), with a lease of a second: a wait for a lease
    that is not the run's any more would fail its step in two."""
    journal = await open_journal(where, clock=lambda: time.time() + ahead)
    try:
        async with make_office(ledger=Ledger(folder)).start(
            journal=journal, lease_ttl=1
        ) as running:
            return await running.resume(run_id)
    finally:
        await journal.close()


def _finished_where_it_stopped(result: RunResult, folder: Path) -> None:
    assert result.status == "completed"
    assert [(step.step_id, step.status) for step in result.steps] == [("t1", "done")]
    nested = nested_run_id(result.run_id, 1, "t1")
    runs = Ledger(folder).body_runs()
    assert runs == {
        f"{nested}/v1/s1/0": 1,  # committed before the freeze: not again
        f"{nested}/v1/s2/0": 2,  # in flight at the freeze: again, with the same key
        f"{nested}/v1/s3/0": 1,
        f"{nested}/v2/s4/0": 1,
    }, runs


async def test_a_woken_old_owner_leaves_the_nested_run_to_the_new_owner(
    where: str, tmp_path: Path
) -> None:
    folder = tmp_path / "crashed"
    async with stopped_child(where, folder, "tool:s2", "nested", "ttl=1") as (run_id, process):
        os.kill(process.pid, signal.SIGSTOP)
        try:
            await take_over(where)
        finally:
            os.kill(process.pid, signal.SIGCONT)
        with anyio.fail_after(30):  # its next heartbeat, within a third of a second
            await process.wait()  # the run failed there: taken over
    assert process.returncode == 1
    said = (folder / "child.log").read_text()
    assert f"run {run_id} was taken over by another process, pid 4242 on elsewhere" in said
    journal = await open_journal(where)
    try:
        entries = await journal.read(nested_run_id(run_id, 1, "t1"))
    finally:
        await journal.close()
    assert not [e.record for e in entries if isinstance(e.record, RunFinished)]  # not ended
    # Past the lease of the process that took it over (an hour, on a clock an hour ahead).
    _finished_where_it_stopped(await _resume(where, run_id, folder, ahead=7300), folder)


async def test_the_new_owner_takes_the_nested_run_over_at_once(where: str, tmp_path: Path) -> None:
    folder = tmp_path / "crashed"
    async with stopped_child(where, folder, "tool:s2", "nested") as (run_id, process):
        os.kill(process.pid, signal.SIGSTOP)  # frozen, its leases alive for 30 s
        await take_over(where, release=True)  # the run is free; its nested run was the old owner's
        result = await _resume(where, run_id, folder)
    _finished_where_it_stopped(result, folder)
