"""``Journal.read_run``: a run's listing and its records in one read, one snapshot.

``regiment show`` read the status and the records in two reads, so a run that finished
in between showed "paused" (or "running") beside its final records. Here another
connection commits a record and a final status between the two statements of the
read (the store's statements run as they do; the write is injected after the first):
the read still sees neither, the next read both. SQLite and PostgreSQL.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import psycopg
import pytest

from regiment.errors import UnknownRun
from regiment.journal import Journal, open_journal, read_run
from regiment.journal._sql import SqlStore

from .durable_team import GOAL, Ledger, make_team
from .test_crash_resume import where

pytestmark = pytest.mark.anyio

__all__ = ("where",)  # the fixture, shared

_FINISH = (
    "INSERT INTO journal_records (run_id, seq, kind, key, recorded_at, body)"
    " SELECT run_id, seq + 1, kind, key, recorded_at, body FROM journal_records"
    " WHERE run_id = {0} ORDER BY seq DESC LIMIT 1",
    "UPDATE journal_runs SET final_status = 'failed', last_seq = last_seq + 1 WHERE run_id = {0}",
)


def _finish_elsewhere(where: str, run_id: str) -> None:
    """Another writer's commit: one more record and a final status for ``run_id``."""
    if where.startswith("postgresql://"):
        with psycopg.connect(where, autocommit=True) as conn, conn.transaction():
            for statement in _FINISH:
                conn.execute(statement.format("%s").encode(), (run_id,))
        return
    file = sqlite3.connect(where, isolation_level=None)
    try:
        file.execute("BEGIN IMMEDIATE")
        for statement in _FINISH:
            file.execute(statement.format("?"), (run_id,))
        file.execute("COMMIT")
    finally:
        file.close()


async def test_the_status_and_the_records_are_read_together(
    where: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ledger = Ledger(tmp_path)
    async with make_team(approve="bolt").start(journal=where) as running:
        paused = await running.run(GOAL, deps=ledger)
    assert paused.status == "paused"
    run_id = paused.run_id
    journal = await open_journal(where, read_only=True)
    try:
        before = len(await journal.read(run_id))
        written = list[str]()
        listed = SqlStore._execute

        def execute(store: SqlStore, statement: str, params: Any = ()) -> list[tuple[Any, ...]]:
            rows = listed(store, statement, params)
            if statement.endswith("AS listed WHERE run_id = ?") and not written:
                written.append(statement)  # once: the listing's read, then another's write
                _finish_elsewhere(where, run_id)
            return rows

        monkeypatch.setattr(SqlStore, "_execute", execute)
        info, entries = await read_run(journal, run_id)
        monkeypatch.undo()
        assert written, "the write between the reads never happened"
        assert (info.status, len(entries)) == ("paused", before)
        info, entries = await read_run(journal, run_id)  # the write, committed: both seen
        assert (info.status, len(entries)) == ("failed", before + 1)
    finally:
        await journal.close()


async def test_a_run_the_journal_does_not_have_is_named(journal: Journal) -> None:
    with pytest.raises(UnknownRun, match="no-such-run"):
        await read_run(journal, "no-such-run")
