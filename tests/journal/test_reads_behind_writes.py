"""A read does not queue behind a write that waits for another process's lock.

The journal was read one call at a time on its one connection: while a resume's start
(its lease's write) waited for a lock another process held, up to the busy timeout
(30 s), every read of the journal waited behind it: a service's ``GET /runs``, its
approvals, ``journal.get_run``. Now reads run on a connection of their own, and a read
outside a run does not wait for a write under way: it reads what is committed.
Real SQLite files with another connection holding the write lock; a real PostgreSQL
with another session holding the run's row lock.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio
import psycopg
import pytest

from regiment.journal import Journal, JournalError, Lease, PostgresJournal, SqliteJournal

from .records import Clock, approval, created, event, new_id
from .test_postgres import _waiting_for_a_lock

pytestmark = pytest.mark.anyio

TTL = 30.0
HANG = 60.0  # only so a test that would hang fails; far below the journals' waits


async def _stalled_run(journal: Journal) -> str:
    """A run with an event and an undecided approval, whose owner let go of it."""
    run_id = new_id()
    lease = await journal.create_run(created(run_id), owner="first", ttl=TTL)
    await journal.append_all(lease, (event(run_id, 0), approval(run_id)), durable=True)
    await journal.release(lease)
    return run_id


async def _reads_while_acquiring(
    journal: Journal,
    run_id: str,
    waiting: Callable[[], Awaitable[None]],
    done: Callable[[], object],
) -> Lease:
    """Start taking ``run_id`` over, wait until that waits (``waiting``), read everything
    a service reads, check the take-over still waits, then let it through (``done``)."""
    taken: list[Lease] = []

    async def take_over() -> None:
        taken.append(await journal.acquire(run_id, owner="resumer", ttl=TTL))

    async with anyio.create_task_group() as tg:
        tg.start_soon(take_over)
        await waiting()
        with anyio.fail_after(HANG):
            listed = await journal.list_runs()
            info = await journal.get_run(run_id)
            entries = await journal.read(run_id)
            pending = await journal.pending_approvals()
            asked = await journal.approval(run_id, "a1")
        assert not taken, "the take-over went through while the lock was held"
        assert [r.run_id for r in listed] == [run_id]
        assert info.status == "paused"
        assert [e.seq for e in entries] == [1, 2, 3]
        assert [p.approval_id for p in pending] == ["a1"]
        assert asked is not None
        assert asked.decision is None
        done()
    (lease,) = taken
    return lease


async def test_sqlite_reads_answer_while_a_take_over_waits_for_the_file_lock(
    tmp_path: Path, clock: Clock
) -> None:
    path = tmp_path / "runs.db"
    journal = await SqliteJournal.open(path, clock=clock, busy_timeout=4 * HANG)
    try:
        run_id = await _stalled_run(journal)
        began = threading.Event()  # the journal's writer began its write transaction
        journal._store._connection().set_trace_callback(  # type: ignore[attr-defined]
            lambda statement: began.set() if statement == "BEGIN IMMEDIATE" else None
        )
        holder = sqlite3.connect(path, isolation_level=None)
        holder.execute("BEGIN IMMEDIATE")  # another process's write transaction

        async def waiting() -> None:
            await anyio.to_thread.run_sync(began.wait)

        try:
            lease = await _reads_while_acquiring(
                journal, run_id, waiting, lambda: holder.execute("COMMIT")
            )
        finally:
            holder.close()
        assert lease.token == 2
        await journal.append(lease, event(run_id, 1), durable=True)
        assert [e.seq for e in await journal.read(run_id)] == [1, 2, 3, 4]
    finally:
        await journal.close()


async def test_postgres_reads_answer_while_a_take_over_waits_for_the_row_lock(
    postgres_url: str, clock: Clock
) -> None:
    journal = await PostgresJournal.open(postgres_url, clock=clock)
    try:
        run_id = await _stalled_run(journal)
        with psycopg.connect(postgres_url, autocommit=True) as holder:
            locked = holder.transaction()
            locked.__enter__()
            holder.execute(b"SELECT 1 FROM journal_runs WHERE run_id = %s FOR UPDATE", (run_id,))

            async def waiting() -> None:
                await _waiting_for_a_lock(holder)

            lease = await _reads_while_acquiring(
                journal, run_id, waiting, lambda: locked.__exit__(None, None, None)
            )
        assert lease.token == 2
        await journal.append(lease, event(run_id, 1), durable=True)
        assert [e.seq for e in await journal.read(run_id)] == [1, 2, 3, 4]
    finally:
        await journal.close()


async def test_a_read_after_close_is_refused(tmp_path: Path, postgres_url: str) -> None:
    # The reads' connection goes with the journal's: a read after close says so.
    for journal in (
        await SqliteJournal.open(tmp_path / "runs.db"),
        await PostgresJournal.open(postgres_url),
    ):
        await journal.list_runs()  # the reads' connection is open
        await journal.close()
        with pytest.raises(JournalError, match="is closed"):
            await journal.list_runs()


async def test_a_relative_path_reads_the_same_file_after_the_directory_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The reads' connection opens at the first read: a relative path resolved then would
    # read another file (or none) once the process had changed directory.
    (tmp_path / "first").mkdir()
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "first")
    journal = await SqliteJournal.open("runs.db")
    try:
        run_id = await _stalled_run(journal)
        monkeypatch.chdir(tmp_path / "elsewhere")
        assert [info.run_id for info in await journal.list_runs()] == [run_id]
    finally:
        await journal.close()
    assert not (tmp_path / "elsewhere" / "runs.db").exists()
