"""A long-lived journal whose writes fail for many runs kept, for each run, its lease and
the error that refused it (~1.9 KB a run) until the journal closed: the lease only so that
a resume through it could let the run go first. Now a run that ends on its journal's error
lets go of its lease as it ends (the release goes with the journal's next commit, not
waited for: the journal may still be failing), and the journal forgets the lease and the
error, reported by then. Its lease is given up in the file too, so a resume elsewhere
(another journal object, another process) takes the run at once.

A real failure: another connection holds the SQLite file's write lock past the journal's
``busy_timeout``.
"""

from __future__ import annotations

import gc
import sqlite3
from pathlib import Path

import pytest

from regiment.errors import JournalError
from regiment.hierarchy import Planner, Team, Worker
from regiment.journal import SqliteJournal
from regiment.models import ModelRequest, ScriptedModel

from ..hierarchy.brains import plan_json, step_of
from .records import created, new_id

pytestmark = pytest.mark.anyio

PLAN = plan_json(
    {"id": "a", "description": "first"},
    {"id": "b", "description": "second", "depends_on": ["a"]},
)
RUNS = 5


def _errors_alive() -> int:
    gc.collect()
    return sum(isinstance(o, JournalError) for o in gc.get_objects())


async def test_runs_failed_by_their_journal_leave_nothing_in_it_and_their_leases_go(
    tmp_path: Path,
) -> None:
    path = tmp_path / "runs.db"
    journal = await SqliteJournal.open(path, busy_timeout=0.02)
    blocker = sqlite3.connect(path, isolation_level=None)

    async def brain(request: ModelRequest) -> str:
        if request.role in ("planner", "replanner"):
            return PLAN
        if request.role == "synthesizer":
            return "answer"
        _, description = step_of(request)
        if description == "first":
            await journal.flush()  # its dispatch is committed, its report never is
            blocker.execute("BEGIN EXCLUSIVE")
        return f"did: {description}"

    model = ScriptedModel(brain, keep_requests=0)
    team = Team(
        name="t",
        planner=Planner(model=model),
        workers=[Worker(name="w", description="does things", model=model)],
    )
    failed: list[str] = []
    try:
        async with team.start(journal=journal) as running:
            for _ in range(RUNS):
                with pytest.raises(JournalError, match="could not be journaled") as error:
                    await running.run("two things")
                failed.append(str(error.value).split()[1])
                del error
                blocker.execute("ROLLBACK")
            await journal.flush()  # (the journal works again: the releases are committed)
            kept = _errors_alive()
            assert kept == 0  # 2 a failed run on main: its error and its cause
            elsewhere = await SqliteJournal.open(path)
            try:
                for run_id in failed:  # on main: LeaseHeld, for the lease's 30 s
                    lease = await elsewhere.acquire(run_id, owner="elsewhere:1:1", ttl=30)
                    await elsewhere.release(lease)
            finally:
                await elsewhere.close()
    finally:
        blocker.close()
        await journal.close()


async def test_a_lease_whose_renewal_failed_is_let_go_of_with_the_next_commit(
    tmp_path: Path,
) -> None:
    # A run whose heartbeat's renewal failed stops there, and its end releases its lease:
    # the release raises the renewal's refusal at once (it waited for a commit, of a
    # journal maybe still failing: 30 s of a locked SQLite file's busy_timeout), and
    # goes with the journal's next commit, once it works again.
    path = tmp_path / "runs.db"
    journal = await SqliteJournal.open(path, busy_timeout=0.02)
    blocker = sqlite3.connect(path, isolation_level=None)
    run_id = new_id()
    try:
        lease = await journal.create_run(created(run_id), owner="here:1:1", ttl=30)
        blocker.execute("BEGIN EXCLUSIVE")
        with pytest.raises(JournalError):
            await journal.renew(lease, ttl=30)
        committed = journal._committed
        with pytest.raises(JournalError):
            await journal.release(lease)
        assert journal._committed == committed  # no commit tried (1 more on main)
        blocker.execute("ROLLBACK")
        await journal.flush()
        assert _errors_alive() == 0  # nothing kept of the refusal
        elsewhere = await SqliteJournal.open(path)
        try:  # on main: LeaseHeld, for the lease's 30 s
            taken = await elsewhere.acquire(run_id, owner="elsewhere:1:1", ttl=30)
            await elsewhere.release(taken)
        finally:
            await elsewhere.close()
    finally:
        blocker.close()
        await journal.close()
