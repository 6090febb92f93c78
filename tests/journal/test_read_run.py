"""``Journal.read_run``: a run's listing and its records in one read, one snapshot.

``regiment show`` read the status and the records in two reads, so a run that finished
in between showed "paused" (or "running") beside its final records. Here another
connection commits a record and a final status between the two statements of the read,
with nothing of ours hooked: on SQLite from the reads' connection's own statement trace
(``set_trace_callback``: as the records' statement begins, before it reads); on
PostgreSQL another session holds ``journal_records`` locked with its write uncommitted,
and commits once the read waits for that lock (``pg_blocking_pids``), so the listing has
been read and the records have not. The read still sees neither, the next read both.
"""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

import anyio
import psycopg
import pytest

from regiment.errors import UnknownRun
from regiment.journal import Entry, Journal, RunInfo, SqliteJournal, open_journal, read_run

from .durable_team import GOAL, Ledger, make_team
from .sql_trace import on_reads
from .test_crash_resume import where

pytestmark = pytest.mark.anyio

__all__ = ("where",)  # the fixture, shared

_FINISH = (
    "INSERT INTO journal_records (run_id, seq, kind, key, recorded_at, body)"
    " SELECT run_id, seq + 1, kind, key, recorded_at, body FROM journal_records"
    " WHERE run_id = {0} ORDER BY seq DESC LIMIT 1",
    "UPDATE journal_runs SET final_status = 'failed', last_seq = last_seq + 1 WHERE run_id = {0}",
)
_RECORDS_READ = "FROM journal_records WHERE run_id ="  # the records' statement of a read
_WAIT = 120.0  # seconds a read may take to reach the lock (never a pass/fail threshold)

Read = tuple[RunInfo, tuple[Entry, ...]]


def _finish_on_sqlite(where: str, run_id: str) -> None:
    """Another writer's commit: one more record and a final status for ``run_id``."""
    file = sqlite3.connect(where, isolation_level=None)
    try:
        file.execute("BEGIN IMMEDIATE")
        for statement in _FINISH:
            file.execute(statement.format("?"), (run_id,))
        file.execute("COMMIT")
    finally:
        file.close()


async def _read_across_sqlite_commit(journal: SqliteJournal, where: str, run_id: str) -> Read:
    """``read_run``, with another connection's commit as its records' statement begins."""
    written: list[str] = []

    def trace(statement: str) -> None:  # (in the reads' thread, the statement not yet run)
        if _RECORDS_READ in statement and not written:
            written.append(statement)
            _finish_on_sqlite(where, run_id)

    connection = await on_reads(journal)
    connection.set_trace_callback(trace)
    try:
        read = await read_run(journal, run_id)
    finally:
        connection.set_trace_callback(None)
    assert written, "the write between the reads never happened"
    return read


def _commit_once_waited(holder: psycopg.Connection[object], where: str) -> None:
    """Commit ``holder``'s transaction once a read of records waits for its lock."""
    deadline = time.monotonic() + _WAIT
    with psycopg.connect(where, autocommit=True) as watcher:
        while watcher.execute(  # (the read's records statement: no autovacuum, say)
            "SELECT count(*) FROM pg_stat_activity WHERE %s = ANY(pg_blocking_pids(pid))"
            " AND backend_type = 'client backend' AND query LIKE %s",
            (holder.info.backend_pid, f"%{_RECORDS_READ}%"),
        ).fetchone() != (1,):
            assert time.monotonic() < deadline, "the read never waited for journal_records"
            time.sleep(0.01)
    holder.commit()


async def _read_across_postgres_commit(journal: Journal, where: str, run_id: str) -> Read:
    """``read_run`` while another session's write, holding ``journal_records`` locked,
    commits once the read waits for that lock: after its listing, before its records."""
    holder: psycopg.Connection[object] = psycopg.connect(where)
    try:  # (its transaction begins with the lock, held until the commit)
        holder.execute("LOCK TABLE journal_records IN ACCESS EXCLUSIVE MODE")
        for statement in _FINISH:
            holder.execute(statement.format("%s").encode(), (run_id,))
        reads: list[Read] = []
        async with anyio.create_task_group() as tasks:

            async def reading() -> None:
                reads.append(await read_run(journal, run_id))

            tasks.start_soon(reading)
            await anyio.to_thread.run_sync(_commit_once_waited, holder, where)
    finally:
        holder.close()  # (a rollback, if it never committed)
    (read,) = reads
    return read


async def test_the_status_and_the_records_are_read_together(where: str, tmp_path: Path) -> None:
    ledger = Ledger(tmp_path)
    async with make_team(approve="bolt").start(journal=where) as running:
        paused = await running.run(GOAL, deps=ledger)
    assert paused.status == "paused"
    run_id = paused.run_id
    journal = await open_journal(where, read_only=True)
    try:
        before = len(await journal.read(run_id))  # (the reads' connection, opened)
        if isinstance(journal, SqliteJournal):
            info, entries = await _read_across_sqlite_commit(journal, where, run_id)
        else:
            info, entries = await _read_across_postgres_commit(journal, where, run_id)
        assert (info.status, len(entries)) == ("paused", before)
        info, entries = await read_run(journal, run_id)  # the write, committed: both seen
        assert (info.status, len(entries)) == ("failed", before + 1)
    finally:
        await journal.close()


async def test_a_run_the_journal_does_not_have_is_named(journal: Journal) -> None:
    with pytest.raises(UnknownRun, match="no-such-run"):
        await read_run(journal, "no-such-run")
