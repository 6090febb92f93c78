"""Two ``regiment serve`` processes share a journal (SQLite, PostgreSQL); the first one is
frozen (SIGSTOP) past its lease, the second resumes its run, and the first is woken up.

The first one then said its run had ``failed`` ("RunError: the run's planner failed while
handling CancelRun: LeaseLost: ...") and listed it so while the second one ran it. Now it
says the run was taken over, by which process, which runs it now; it lists and shows the
run as the journal has it; a ``?wait=true`` post it took waits for the run's end in the
other process (serve/_waits.py); and nothing it did after the take-over reaches the journal.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import anyio
import httpx2 as httpx
import pytest

from regiment.journal import Entry, RunFinished, RunInfo, open_journal
from tests.cli.helpers import write_team
from tests.serve.cli_serving import Served, serving

from .test_crash_resume import where

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="signals need POSIX")

__all__ = ("where",)  # the fixture: SQLite and PostgreSQL


def _take_over(run_id: str, old: Served, new: Served) -> None:
    """Freeze ``old`` (SIGSTOP), resume ``run_id`` on ``new`` once the frozen owner's lease
    has run out, wake ``old`` up (SIGCONT), and read its log until it says it lost the run."""
    os.kill(old.child.pid, signal.SIGSTOP)
    try:
        while (resumed := httpx.post(f"{new.url}/runs/{run_id}/resume")).status_code == 409:
            assert "which still runs" in resumed.text, resumed.text  # its lease, not else
            time.sleep(0.1)  # what is waited for is the lease's expiry in the journal
        assert resumed.status_code == 202, resumed.text
    finally:
        os.kill(old.child.pid, signal.SIGCONT)
    old.read_until("was taken over by another process")


def _last_event(url: str, run_id: str) -> dict[str, object]:
    """The last event a follower of ``GET /runs/{run_id}/events`` got, the stream read to its end."""
    with httpx.stream("GET", f"{url}/runs/{run_id}/events", timeout=60) as events:
        data = [line for line in events.iter_lines() if line.startswith("data:")]
    last: dict[str, object] = json.loads(data[-1].removeprefix("data:"))
    return last


def _journaled(where: str, run_id: str) -> tuple[RunInfo, tuple[Entry, ...]]:
    async def read() -> tuple[RunInfo, tuple[Entry, ...]]:
        journal = await open_journal(where)
        try:
            return await journal.get_run(run_id), await journal.read(run_id)
        finally:
            await journal.close()

    return anyio.run(read)


def test_the_old_owner_says_the_run_was_taken_over_and_lists_it_as_the_journal_does(
    tmp_path: Path, where: str
) -> None:
    team = write_team(tmp_path, "stuck")
    flags = ("--journal", where, "--lease-ttl", "1")
    with (
        serving(team, *flags) as old,
        serving(team, *flags) as new,
        ThreadPoolExecutor(2) as threads,
    ):
        waiting = threads.submit(
            httpx.post, f"{old.url}/runs?wait=true", json={"goal": "wait"}, timeout=60
        )
        old.read_until("run started")
        (run_id,) = [r["run_id"] for r in httpx.get(f"{old.url}/runs").json()["runs"]]
        followed: Future[dict[str, object]] = threads.submit(_last_event, old.url, run_id)
        old.read_until('/events HTTP/1.1" 200')  # the follower is there
        _take_over(run_id, old, new)
        (line,) = [s for s in old.seen if "was taken over" in s]
        assert f"pid {new.child.pid} on " in line  # the process that runs it now
        assert "which runs it now" in line
        assert "failed" not in line
        last = followed.result(timeout=60)
        assert (last["type"], last["error_type"]) == ("RunFailed", "LeaseLost")
        assert "was taken over by another process" in str(last["message"])
        listed = httpx.get(f"{old.url}/runs").json()["runs"]
        assert [(r["run_id"], r["status"]) for r in listed] == [(run_id, "running")]
        shown = httpx.get(f"{old.url}/runs/{run_id}").json()
        assert (shown["status"], shown["error"]) == ("running", None)
        info, entries = _journaled(where, run_id)
        assert info.status == "running"  # the new owner's, not ended by the old one
        assert not [e for e in entries if isinstance(e.record, RunFinished)]
        assert not waiting.done()  # the old owner's ?wait=true post waits for the run's end
        new.child.send_signal(signal.SIGTERM)  # the new owner ends it: cancelled
        assert new.rest()[0] == 0
        answered = waiting.result(timeout=60).json()  # as the journal has the run's end
        assert (answered["run_id"], answered["status"]) == (run_id, "cancelled")
    assert _journaled(where, run_id)[0].status == "cancelled"


def test_a_late_follower_of_the_old_owner_gets_the_take_over_and_the_old_owner_stops_cleanly(
    tmp_path: Path, where: str
) -> None:
    # A follower that came after the take-over got no event at all (the journal's view of
    # the run, which had none of the old owner's yet) and no end; and SIGTERM then made
    # the old service exit 2, "regiment: error: ... took the run over (token 2)": its
    # journal's close raised the refusal of the run's last writes, reported already.
    team = write_team(tmp_path, "stuck")
    flags = ("--journal", where, "--lease-ttl", "1")
    with serving(team, *flags) as old, serving(team, *flags) as new:
        run_id = httpx.post(f"{old.url}/runs", json={"goal": "wait"}).json()["run_id"]
        old.read_until("run started")
        _take_over(run_id, old, new)
        last = _last_event(old.url, run_id)  # as an early follower's stream ended
        assert (last["type"], last["error_type"]) == ("RunFailed", "LeaseLost")
        assert f"pid {new.child.pid} on " in str(last["message"])
        # With what the run got to, as a failed or cancelled run's ending has it (it had
        # no plans, no usage, no model calls).
        assert [plan["version"] for plan in last["plans"]] == [1]  # type: ignore[attr-defined]
        assert last["model_calls"] == 1
        old.child.send_signal(signal.SIGTERM)
        exit_code, said = old.rest()
        assert exit_code == 0, said
        assert "regiment: error" not in said
        new.child.send_signal(signal.SIGTERM)
        assert new.rest()[0] == 0
    assert _journaled(where, run_id)[0].status == "cancelled"  # the new owner's end
