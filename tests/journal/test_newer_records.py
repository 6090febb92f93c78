"""A journal a newer regiment wrote: records of a kind this regiment does not know.

A newer regiment adds record kinds (``ModelCallStarted`` was one): an older one reading
its journal failed every read of such a run with "holds a record that cannot be read",
so ``regiment show`` showed nothing of it, and the message did not say why or what to
do. Now a read leaves those records out with a warning naming their kinds (``show``
prints it with the run), a run's own read (a resume's) refuses with ``NewerRecord``
("upgrade regiment"), and the records stay in the journal. Real SQLite files and a
real PostgreSQL; the record is written as a newer regiment would, by SQL.
"""

from __future__ import annotations

import json
import logging
import sqlite3
from pathlib import Path

import psycopg
import pytest

from regiment.journal import JournalError, NewerRecord, open_journal, patient_reads
from tests.cli.helpers import run_cli

from .records import Clock, created, event, new_id

pytestmark = pytest.mark.anyio

TTL = 30.0
KIND = "budget_topped_up"  # a kind no regiment writes yet
_BODY = {"type": KIND, "run_id": "", "usd": 1.5}
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
    else:
        with sqlite3.connect(location) as lite:
            lite.execute(_INSERT.format("?"), row)
            lite.execute("UPDATE journal_runs SET last_seq = 3 WHERE run_id = ?", (run_id,))
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
