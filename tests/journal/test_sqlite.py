"""The SQLite file: what it refuses, what it migrates, and how a failed write surfaces."""

from __future__ import annotations

import contextlib
import hashlib
import sqlite3
from collections.abc import Sequence
from pathlib import Path

import anyio
import pytest

from regiment.journal import JournalError, SqliteJournal, open_journal

from .records import Clock, created, event, new_id
from .v1_schema import RUN_ID, write_v1

pytestmark = pytest.mark.anyio

TTL = 30.0


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


async def test_a_file_that_is_not_a_database_is_named_and_left_alone(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("these are my notes, not a journal\n" * 200)
    before = _digest(path)
    with pytest.raises(JournalError, match=f"{path} is not a regiment journal") as caught:
        await open_journal(path)
    assert "left untouched" in str(caught.value)
    assert _digest(path) == before
    assert [p.name async for p in anyio.Path(tmp_path).iterdir()] == ["notes.txt"]


async def test_another_programs_database_is_refused_unchanged(tmp_path: Path) -> None:
    path = tmp_path / "app.db"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT)")
        conn.execute("INSERT INTO customers (name) VALUES ('ada')")
    conn.close()
    before = _digest(path)
    with pytest.raises(
        JournalError,
        match=r"app\.db is an SQLite database but not a regiment journal \(it has the tables customers\)",
    ):
        await open_journal(str(path))
    assert _digest(path) == before


async def test_a_damaged_journal_fails_naming_the_file_and_is_not_rewritten(
    tmp_path: Path,
) -> None:
    path = tmp_path / "journal.db"
    journal = await open_journal(path)
    run_id = new_id()
    lease = await journal.create_run(created(run_id), owner="w", ttl=TTL)
    await journal.append_all(lease, [event(run_id, i) for i in range(300)], durable=True)
    await journal.close()
    data = bytearray(path.read_bytes())
    data[4096:] = b"\xa5" * (len(data) - 4096)  # every page after the first is garbage
    path.write_bytes(bytes(data))
    before = _digest(path)
    with pytest.raises(JournalError, match=str(path)):
        await _open_and_read(path, run_id)
    assert _digest(path) == before


async def _open_and_read(path: Path, run_id: str) -> None:
    journal = await open_journal(path)
    try:
        await journal.read(run_id)
    finally:
        await journal.close()


async def test_a_journal_from_a_newer_schema_is_refused_untouched(tmp_path: Path) -> None:
    path = tmp_path / "journal.db"
    await (await open_journal(path)).close()
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE journal_meta SET value = '99' WHERE name = 'schema_version'")
    conn.close()
    before = _digest(path)
    with pytest.raises(
        JournalError, match=r"newer regiment \(schema version 99; this one reads up to 2\); upgrade"
    ):
        await open_journal(path)
    assert _digest(path) == before


async def test_a_version_1_journal_is_migrated_and_keeps_its_runs(
    tmp_path: Path, clock: Clock
) -> None:
    path = tmp_path / "journal.db"
    conn = sqlite3.connect(path, isolation_level=None)

    def execute(statement: str, params: Sequence[object]) -> object:
        return conn.execute(statement, tuple(params))

    write_v1(execute, blob="BLOB", mark="?")
    conn.close()
    journal = await open_journal(path, clock=clock)
    try:
        assert [e.record for e in await journal.read(RUN_ID)] == [created(RUN_ID), event(RUN_ID, 0)]
        info = await journal.get_run(RUN_ID)
        assert (info.status, info.session) == ("stalled", None)
        lease = await journal.acquire(RUN_ID, owner="new", ttl=TTL)
        assert await journal.append(lease, event(RUN_ID, 1), durable=True) == 3
    finally:
        await journal.close()
    with sqlite3.connect(path) as check:
        version = check.execute("SELECT value FROM journal_meta WHERE name = 'schema_version'")
        assert version.fetchone() == ("2",)
        columns = {row[1] for row in check.execute("PRAGMA table_info(journal_runs)")}
        assert {"session", "pending_approvals"} <= columns
    check.close()


async def test_a_new_journal_carries_its_version_from_the_first_row_and_uses_wal(
    tmp_path: Path,
) -> None:
    path = tmp_path / "sub" / "dir" / "journal.db"
    await (await open_journal(path)).close()
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT name, value FROM journal_meta ORDER BY rowid").fetchall() == [
            ("format", "regiment.journal"),
            ("schema_version", "2"),
        ]
        assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    conn.close()


async def test_a_write_that_cannot_commit_fails_the_run_instead_of_going_on(
    tmp_path: Path, clock: Clock
) -> None:
    path = tmp_path / "journal.db"
    journal = await SqliteJournal.open(path, clock=clock, busy_timeout=0.05)
    run_id = new_id()
    lease = await journal.create_run(created(run_id), owner="w", ttl=TTL)
    blocker = sqlite3.connect(path, isolation_level=None)
    blocker.execute("BEGIN EXCLUSIVE")  # another process holds the file for too long
    try:
        await journal.append(lease, event(run_id, 0))
        with pytest.raises(
            JournalError,
            match=rf"journal {path}: writing 2 records failed: database is locked: another "
            r"process held the file's write lock for the whole busy timeout \(0\.05 s\); stop "
            "what holds it",
        ):
            await journal.append(lease, event(run_id, 1), durable=True)
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()
    with pytest.raises(JournalError, match="database is locked"):
        await journal.append(lease, event(run_id, 2), durable=True)  # never continues with a gap
    assert [e.seq for e in await journal.read(run_id)] == [1]
    with pytest.raises(JournalError, match="database is locked"):
        await journal.release(lease)  # lets go of the run, then reports the lost writes
    assert (await journal.get_run(run_id)).status == "stalled"
    await journal.close()


async def test_a_journal_locked_past_the_busy_timeout_at_open_says_so(tmp_path: Path) -> None:
    # Only an open that writes waits for the lock: one of an older schema (migrated).
    path = tmp_path / "journal.db"
    with contextlib.closing(sqlite3.connect(path, isolation_level=None)) as conn:
        write_v1(conn.execute, blob="BLOB", mark="?")
    blocker = sqlite3.connect(path, isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")
    try:
        with pytest.raises(JournalError, match=r"stayed locked by another process .*\(0\.05 s\)"):
            await SqliteJournal.open(path, busy_timeout=0.05)
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()
    await (await SqliteJournal.open(path, busy_timeout=0.05)).close()


async def test_a_journal_of_this_schema_opens_while_another_holds_its_write_lock(
    tmp_path: Path,
) -> None:
    # Its open wrote (the schema's check, in a write transaction), so it waited the busy
    # timeout and failed: a service could not start beside a process writing the file.
    path = tmp_path / "journal.db"
    await (await open_journal(path)).close()
    blocker = sqlite3.connect(path, isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")
    try:
        journal = await SqliteJournal.open(path, busy_timeout=0.05)
        try:
            assert await journal.list_runs() == ()
            assert blocker.in_transaction  # held all along
            blocker.execute("ROLLBACK")
            lease = await journal.create_run(created(new_id()), owner="me:1", ttl=60)
            await journal.flush(lease)  # and it writes once the lock is gone
            assert len(await journal.list_runs()) == 1
        finally:
            await journal.close()
    finally:
        blocker.close()


@pytest.mark.parametrize("where", ["under-a-file", "a-directory"])
async def test_a_path_that_cannot_be_written_is_not_called_damaged(
    tmp_path: Path, where: str
) -> None:
    # A journal path SQLite cannot open for writing (a read-only directory or file system,
    # no permission, a disk full, a directory, a file where its directory should be) was
    # "not a regiment journal, or it is damaged": a user moved a good journal away.
    if where == "under-a-file":
        (tmp_path / "notes.txt").write_text("not a directory\n")
        path = tmp_path / "notes.txt" / "journal.db"
    else:
        path = tmp_path / "journal.db"
        path.mkdir()
    with pytest.raises(JournalError) as caught:
        await open_journal(path)
    message = str(caught.value)
    assert message.startswith(f"journal {path} cannot be opened for writing (")
    assert "journal.db-wal and journal.db-shm" in message
    assert "may write to both" in message
    assert "damaged" not in message
