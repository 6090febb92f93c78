"""A journal this process may only read: on a read-only mount, say, or a backup's copy.

Root is not stopped by file modes, so as root the journal's directory is bind-mounted
read-only (and unmounted after); as anyone else the directory and file lose their
write bits. Either way SQLite can create nothing beside the file (no ``-shm``).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import sqlite3
import stat
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from regiment.cli import run_async
from regiment.errors import JournalError
from regiment.journal import SqliteJournal, open_journal

from .records import approval, created, event, intent, new_id, one_of_each
from .v1_schema import RUN_ID, write_v1

pytestmark = pytest.mark.anyio


@pytest.fixture
def read_only(tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    """``(writable, read_only)``: one directory seen twice, the second unwritable."""
    writable, seen = tmp_path / "journal", tmp_path / "mounted"
    writable.mkdir()
    if os.geteuid() != 0:
        yield writable, writable
        for path in writable.iterdir():
            path.chmod(stat.S_IRUSR | stat.S_IWUSR)
        writable.chmod(stat.S_IRWXU)
        return
    seen.mkdir()
    for argv in (["--bind", str(writable)], ["-o", "remount,ro,bind"]):
        if subprocess.run(["mount", *argv, str(seen)], check=False).returncode:
            subprocess.run(["umount", str(seen)], check=False)
            pytest.fail("making a read-only bind mount as root failed (no CAP_SYS_ADMIN?)")
    try:
        yield writable, seen
    finally:
        subprocess.run(["umount", str(seen)], check=True)


def _protect(directory: Path) -> None:
    """As no root: take the write bits away (as root the mount does it)."""
    if os.geteuid() != 0:
        for path in directory.iterdir():
            path.chmod(stat.S_IRUSR)
        directory.chmod(stat.S_IRUSR | stat.S_IXUSR)


def _open_files(directory: Path) -> list[str]:
    """The files under ``directory`` this process holds open."""
    held = []
    for fd in os.listdir("/proc/self/fd"):
        with contextlib.suppress(OSError):  # (the listing's own descriptor, gone)
            target = os.readlink(f"/proc/self/fd/{fd}")
            if target.startswith(f"{directory}/"):
                held.append(target)
    return held


async def _write(path: Path) -> tuple[str, str]:
    """A finished run and one paused for an approval; the journal is closed cleanly."""
    done, paused = new_id(), new_id()
    journal = await SqliteJournal.open(path)
    try:
        for run_id, records in ((done, one_of_each(done)), (paused, [approval(paused, "a9")])):
            lease = await journal.create_run(created(run_id), owner="me:1", ttl=60)
            await journal.append_all(lease, records)
            await journal.release(lease)
    finally:
        await journal.close()
    return done, paused


async def _cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = await run_async(list(argv), stdout=out, stderr=err, environ={})
    return code, out.getvalue(), err.getvalue()


async def test_the_reading_commands_read_a_journal_they_cannot_write(
    read_only: tuple[Path, Path],
) -> None:
    # `regiment runs`, `show` and `approvals` opened the journal for writing, so on a
    # read-only mount they failed ("cannot be opened for writing") with nothing to write.
    writable, seen = read_only
    done, paused = await _write(writable / "j.db")
    _protect(writable)
    path = str(seen / "j.db")
    code, out, err = await _cli("runs", "--json", "--journal", path)
    assert code == 0, err
    assert {json.loads(line)["run_id"] for line in out.splitlines()} == {done, paused}
    code, out, err = await _cli("show", done, "--json", "--journal", path)
    assert code == 0, err
    assert (json.loads(out)["status"], json.loads(out)["answer"]) == ("completed", "done")
    code, out, err = await _cli("approvals", "--journal", path)
    assert code == 0, err
    assert out.rstrip().endswith('issue_refund({"x": 1})')
    # Deciding writes: that is still refused, saying why.
    code, out, err = await _cli("approve", paused, "a9", "--journal", path)
    assert (code, out) == (2, "")
    assert f"journal {path} cannot be opened for writing (" in err
    assert sorted(p.name for p in seen.iterdir()) == ["j.db"]  # nothing made beside it


async def test_a_journal_opened_read_only_reads_and_refuses_writes(
    read_only: tuple[Path, Path],
) -> None:
    writable, seen = read_only
    done, paused = await _write(writable / "j.db")
    _protect(writable)
    journal = await open_journal(seen / "j.db", read_only=True)
    try:
        assert {info.run_id for info in await journal.list_runs()} == {done, paused}
        assert (await journal.get_run(done)).status == "completed"
        assert len(await journal.read(done)) == 1 + len(one_of_each(done))
        assert [r.approval_id for r in await journal.pending_approvals(paused)] == ["a9"]
        with pytest.raises(JournalError, match=r"was opened read-only \(read_only=True\)"):
            await journal.create_run(created(new_id()), owner="me:1", ttl=60)
    finally:
        await journal.close()
    with pytest.raises(JournalError, match="cannot be opened for writing"):
        await open_journal(seen / "j.db")  # without read_only: as before


async def test_a_read_only_open_sees_what_a_live_writer_has_not_folded_in(
    tmp_path: Path,
) -> None:
    # Records a writer still holds in FILE-wal are read too (SQLite's -shm is there).
    path = tmp_path / "j.db"
    run_id = new_id()
    writer = await SqliteJournal.open(path)
    try:
        lease = await writer.create_run(created(run_id), owner="me:1", ttl=60)
        await writer.append_all(lease, [intent(run_id), event(run_id, 1)])
        await writer.flush(lease)
        assert (tmp_path / "j.db-wal").stat().st_size > 0
        reader = await open_journal(path, read_only=True)
        try:
            assert len(await reader.read(run_id)) == 3
        finally:
            await reader.close()
    finally:
        await writer.close()


async def test_records_only_a_wal_file_holds_are_not_read_past_silently(
    read_only: tuple[Path, Path],
) -> None:
    # A writer's FILE-wal left beside the file (copied while the writer ran: as a crash
    # leaves it) with no FILE-shm, where none can be made: reading the file alone would
    # miss those records, so the read-only open says why it cannot read them.
    writable, seen = read_only
    run_id = new_id()
    writer = await SqliteJournal.open(writable / "live.db")
    try:
        lease = await writer.create_run(created(run_id), owner="me:1", ttl=60)
        await writer.flush(lease)
        for suffix in ("", "-wal"):
            (writable / f"j.db{suffix}").write_bytes((writable / f"live.db{suffix}").read_bytes())
    finally:
        await writer.close()
    _protect(writable)
    with pytest.raises(JournalError, match=r"its j\.db-wal file holds records not yet in it"):
        await open_journal(seen / "j.db", read_only=True)


async def test_a_journal_it_cannot_write_is_refused_at_the_open_though_sqlite_opens_it(
    read_only: tuple[Path, Path],
) -> None:
    # With its -wal and -shm beside it (a live writer's, copied; or left by a read-only
    # open), SQLite opened the file on a read-only mount read-only without a word: the
    # open went through, and the run failed at its first record ("attempt to write a
    # readonly database"), a service once it had started serving.
    writable, seen = read_only
    writer = await SqliteJournal.open(writable / "live.db")
    try:
        lease = await writer.create_run(created(new_id()), owner="me:1", ttl=60)
        await writer.flush(lease)
        for suffix in ("", "-wal", "-shm"):
            (writable / f"j.db{suffix}").write_bytes((writable / f"live.db{suffix}").read_bytes())
    finally:
        await writer.close()
    _protect(writable)
    with pytest.raises(JournalError, match=f"journal {seen / 'j.db'} cannot be opened for writing"):
        await open_journal(seen / "j.db")
    # and the refused open let go of the files (its failed statement kept them open)
    assert _open_files(seen) == []
    reader = await open_journal(seen / "j.db", read_only=True)  # reading it works
    try:
        assert len(await reader.list_runs()) == 1
    finally:
        await reader.close()


async def test_runs_on_a_journal_of_an_older_schema_says_how_to_migrate_it(
    tmp_path: Path,
) -> None:
    # It said to open it with "any regiment command that writes it", and no command of
    # the reading three does: it now names the ones that do, and the call from Python.
    path = tmp_path / "v1.db"
    with contextlib.closing(sqlite3.connect(path, isolation_level=None)) as conn:
        write_v1(conn.execute, blob="BLOB", mark="?")
    code, out, err = await _cli("runs", "--journal", str(path))
    assert (code, out) == (2, "")
    assert "has schema version 1 and this regiment reads version 2" in err
    assert "(as regiment runs, show and approvals open it), which never migrates" in err
    assert "the next regiment run, resume or approve with this --journal does" in err
    assert "`await open_journal(path)`, then close it" in err
    await (await open_journal(path)).close()  # as it says
    code, out, err = await _cli("runs", "--journal", str(path))
    assert code == 0, err
    assert out.startswith(f"{RUN_ID}  ")
