"""Several processes opening the same new SQLite journal at once all open it.

SQLite answers "database is locked" at once, without waiting the busy timeout, when two
connections switch the same new file to WAL mode at the same moment; the journal's open
failed then, saying the file "stayed locked for the whole busy timeout" (two services
started together on a new journal file, seen as a service that would not start). Each
open here is its own connection in its own worker thread, as in separate processes.
"""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

import anyio
import pytest

from regiment.errors import JournalError
from regiment.journal import SqliteJournal, open_journal

pytestmark = pytest.mark.anyio

ROUNDS = 60  # main failed about one round in 15 with 3 opens a round, here 4
OPENS = 4


async def test_opens_of_one_new_file_at_the_same_moment_all_succeed(tmp_path: Path) -> None:
    failed: list[str] = []

    async def opening(path: Path) -> None:
        try:
            journal = await open_journal(path)
        except JournalError as exc:
            failed.append(str(exc))
            return
        await journal.close()

    for n in range(ROUNDS):
        path = tmp_path / f"runs-{n}.db"
        async with anyio.create_task_group() as tg:
            for _ in range(OPENS):
                tg.start_soon(opening, path)
    assert failed == []
    journal = await open_journal(tmp_path / "runs-0.db")  # a journal, in WAL mode
    await journal.close()
    with sqlite3.connect(tmp_path / "runs-0.db") as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)


async def test_a_new_file_locked_past_the_busy_timeout_fails_after_it_saying_so(
    tmp_path: Path,
) -> None:
    # Retrying the switch to WAL mode stops at the busy timeout: the error is still raised,
    # and only once the timeout it names has passed. Another program reading the new
    # (rollback-journal) file holds it: it can be read, not switched.
    path = tmp_path / "runs.db"
    blocker = sqlite3.connect(path, isolation_level=None)
    blocker.execute("BEGIN")
    blocker.execute("SELECT count(*) FROM sqlite_master").fetchall()
    try:
        started = time.monotonic()
        with pytest.raises(JournalError, match=r"stayed locked by another process .*\(0\.2 s\)"):
            await SqliteJournal.open(path, busy_timeout=0.2)
        assert time.monotonic() - started >= 0.2
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()
