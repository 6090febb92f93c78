"""A journal a newer regiment wrote: records of a kind this regiment does not know.

A newer regiment adds record kinds (``ModelCallStarted`` was one): an older one reading
its journal failed every read of such a run with "holds a record that cannot be read",
so ``regiment show`` showed nothing of it, and the message did not say why or what to
do. Now a read leaves those records out with a warning naming their kinds (``show``
prints it with the run), a run's own read (a resume's) refuses with ``NewerRecord``
("upgrade regiment"), and the records stay in the journal. Real SQLite files and a
real PostgreSQL; the record is written as a newer regiment would, by SQL.

The journal also says which kinds it holds (a ``record:KIND`` row in ``journal_meta``,
written with the first record of the kind), so a regiment learns of a newer kind as it
opens the journal (a warning naming the kinds, the regiment that wrote them and what to
do), not first when a resume reads the record. Before, nothing in a journal said so.
"""

from __future__ import annotations

import json
import logging
import sqlite3
from pathlib import Path

import psycopg
import pytest

from regiment import __version__
from regiment.journal import JournalError, NewerRecord, open_journal, patient_reads
from tests.cli.helpers import run_cli

from .records import Clock, created, event, new_id

pytestmark = pytest.mark.anyio

TTL = 30.0
KIND = "budget_topped_up"  # a kind no regiment writes yet
_BODY = {"type": KIND, "run_id": "", "usd": 1.5}
NEWER = "9.9.0"  # the regiment that wrote KIND
_MARK = "INSERT INTO journal_meta (name, value) VALUES ({0}, {0})"
_INSERT = (
    "INSERT INTO journal_records (run_id, seq, kind, key, recorded_at, body)"
    " VALUES ({0}, 3, {0}, NULL, 1.0, {0})"
)


async def _written_by_a_newer_regiment(location: str, clock: Clock) -> str:
    """A stalled run of two records, then one of ``KIND`` (seq 3), as a newer regiment
    appends it; its id."""
    journal = await open_journal(location, clock=clock)
    run_id = new_id()
    try:
        lease = await journal.create_run(created(run_id), owner="newer", ttl=TTL)
        await journal.append(lease, event(run_id, 0), durable=True)
        await journal.release(lease)
    finally:
        await journal.close()
    row = (run_id, KIND, json.dumps({**_BODY, "run_id": run_id}).encode())
    if "://" in location:
        with psycopg.connect(location, autocommit=True) as conn:
            conn.execute(_INSERT.format("%s").encode(), row)
            conn.execute(b"UPDATE journal_runs SET last_seq = 3 WHERE run_id = %s", (run_id,))
            conn.execute(_MARK.format("%s").encode(), (f"record:{KIND}", NEWER))
    else:
        with sqlite3.connect(location) as lite:
            lite.execute(_INSERT.format("?"), row)
            lite.execute("UPDATE journal_runs SET last_seq = 3 WHERE run_id = ?", (run_id,))
            lite.execute(_MARK.format("?"), (f"record:{KIND}", NEWER))
        lite.close()
    return run_id


@pytest.fixture(params=["sqlite", "postgres"])
def location(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return str(tmp_path / "runs.db")
    return str(request.getfixturevalue("postgres_url"))


async def test_a_read_leaves_a_newer_kind_out_and_says_so(
    location: str, clock: Clock, caplog: pytest.LogCaptureFixture
) -> None:
    run_id = await _written_by_a_newer_regiment(location, clock)
    journal = await open_journal(location, clock=clock)
    try:
        with caplog.at_level(logging.WARNING, "regiment.journal"):
            entries = await journal.read(run_id)
        assert [e.seq for e in entries] == [1, 2]
        assert f"1 of kind {KIND!r}" in caplog.text
        assert "a newer regiment wrote them" in caplog.text
        assert "Upgrade regiment" in caplog.text
        assert [info.run_id for info in await journal.list_runs()] == [run_id]
        assert (await journal.get_run(run_id)).status == "stalled"
        with patient_reads(), pytest.raises(NewerRecord) as refused:  # a resume's read
            await journal.read(run_id)
        assert refused.value.kind == KIND
        assert isinstance(refused.value, JournalError)
        assert f"record of kind {KIND!r}" in str(refused.value)
        assert "Upgrade regiment" in str(refused.value)
        assert "left untouched" in str(refused.value)
    finally:
        await journal.close()
    # Nothing was dropped: a regiment that knows the kind reads it where it was.
    if "://" in location:
        with psycopg.connect(location) as conn:
            kinds = conn.execute(
                b"SELECT kind FROM journal_records WHERE run_id = %s ORDER BY seq", (run_id,)
            ).fetchall()
    else:
        with sqlite3.connect(location) as lite:
            kinds = lite.execute(
                "SELECT kind FROM journal_records WHERE run_id = ? ORDER BY seq", (run_id,)
            ).fetchall()
        lite.close()
    assert [k for (k,) in kinds] == ["run_created", "event", KIND]


async def test_regiment_show_shows_the_rest_and_the_note(location: str, clock: Clock) -> None:
    run_id = await _written_by_a_newer_regiment(location, clock)
    code, out, err = await run_cli("show", run_id, "--journal", location)
    assert (code, err) == (0, "")
    assert f"run {run_id} (support): stalled" in out
    assert f"note: journal {run_id}" not in out  # (the note names the journal, then the run)
    assert f"run {run_id} has records this regiment" in out
    assert f"(1 of kind {KIND!r})" in out
    code, out, err = await run_cli("show", run_id, "--json", "--journal", location)
    assert code == 0
    shown = json.loads(out)
    assert shown["status"] == "stalled"
    (note,) = shown["not_shown"]
    assert KIND in note
    assert "Upgrade regiment" in note


def _marks(location: str) -> dict[str, str]:
    statement = "SELECT name, value FROM journal_meta WHERE name LIKE 'record:%'"
    if "://" in location:
        with psycopg.connect(location) as conn:
            rows = conn.execute(statement.encode()).fetchall()
    else:
        with sqlite3.connect(location) as lite:
            rows = lite.execute(statement).fetchall()
        lite.close()
    return {str(name): str(value) for name, value in rows}


async def test_the_journal_says_which_kinds_of_record_it_holds(location: str, clock: Clock) -> None:
    journal = await open_journal(location, clock=clock)
    try:
        assert _marks(location) == {}
        run_id = new_id()
        lease = await journal.create_run(created(run_id), owner="w", ttl=TTL)
        await journal.append(lease, event(run_id, 0), durable=True)
        await journal.append(lease, event(run_id, 1), durable=True)
    finally:
        await journal.close()
    assert _marks(location) == {"record:run_created": __version__, "record:event": __version__}


@pytest.mark.parametrize("read_only", [False, True])
async def test_opening_a_journal_holding_a_newer_kind_says_so(
    location: str, clock: Clock, caplog: pytest.LogCaptureFixture, read_only: bool
) -> None:
    run_id = await _written_by_a_newer_regiment(location, clock)
    with caplog.at_level(logging.WARNING, "regiment.journal"):
        journal = await open_journal(location, clock=clock, read_only=read_only)
    try:
        (warned,) = [r.getMessage() for r in caplog.records if "newer regiment" in r.getMessage()]
        assert f"holds records of kind {KIND!r} (written by regiment {NEWER})" in warned
        assert f"which this regiment ({__version__}) does not know" in warned
        assert "a resume of one is refused (NewerRecord)" in warned
        assert "upgrade regiment (to the version named, or later)" in warned
        assert [info.run_id for info in await journal.list_runs()] == [run_id]
    finally:
        await journal.close()
    assert _marks(location)[f"record:{KIND}"] == NEWER  # (kept as it was)


async def test_regiment_runs_notes_the_newer_kinds_the_journal_holds(
    location: str, clock: Clock
) -> None:
    # The warning as the journal opened went nowhere a user of the command sees.
    run_id = await _written_by_a_newer_regiment(location, clock)
    code, out, err = await run_cli("runs", "--journal", location)
    assert (code, err) == (0, "")
    listed, note = out.splitlines()
    assert listed.startswith(f"{run_id}  stalled  ")
    assert note.startswith("note: journal ")
    assert f"holds records of kind {KIND!r} (written by regiment {NEWER})" in note
    code, out, err = await run_cli("runs", "--json", "--journal", location)
    assert (code, err) == (0, "")
    assert [json.loads(line)["run_id"] for line in out.splitlines()] == [run_id]  # runs only
