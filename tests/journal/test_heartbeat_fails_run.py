"""A run whose heartbeat cannot renew its lease while a step works stops, says why, and
is resumable, with no side effect repeated: on SQLite (another program holds the file's
write lock past the journal's ``busy_timeout``) and on PostgreSQL (the server stopped).

Between two of the run's own writes only the heartbeat writes: a tool that waits long
(here, for ever) leaves the renewal as the first write to fail. The run must not go on
unjournaled, nor hang: the refused renewal cancels its steps (the tool is cut), the run
fails with the ``JournalError``, and once the journal works again a resume finishes it,
the cut call run again under its own key (so the charge is made once).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path

import anyio
import pytest

from regiment.errors import JournalError
from regiment.journal import Journal, PostgresJournal, SqliteJournal

from .durable_team import GOAL, Ledger, make_team
from .test_postgres_down import server

pytestmark = pytest.mark.anyio

__all__ = ("server",)  # the fixture, shared

TTL = 1.0  # the lease is renewed every third of a second


async def _renewal_fails_then_resumes(
    journal: Journal, tmp_path: Path, break_it: Callable[[], object], mend: Callable[[], object]
) -> str:
    """Run the durable team until its tool has charged bolt (s2), break the journal there
    while the tool waits for ever, mend it once the run has failed, resume the run in the
    same started team; what the run's error said."""
    ledger = Ledger(tmp_path)
    cut = anyio.Event()

    async def stop(where: str) -> None:
        if where == "tool:s2" and not cut.is_set():
            await anyio.to_thread.run_sync(break_it)
            try:
                await anyio.sleep_forever()  # only the heartbeat writes meanwhile
            finally:
                cut.set()  # the run's failure cut the tool: it did not go on

    async with make_team(stop, ledger=ledger).start(journal=journal, lease_ttl=TTL) as running:
        with pytest.raises(JournalError) as failed:
            await running.run(GOAL, deps=ledger)
        assert cut.is_set()
        said = str(failed.value)
        run_id = said.split()[1]
        assert (await _status(journal, run_id, mend)) == "stalled"  # unfinished, ownerless
        result = await running.resume(run_id, deps=ledger)
    assert result.status == "completed", result
    effects = [line[0] for line in ledger.lines(ledger.effects)]
    assert len(effects) == len(set(effects)) == 4  # acme, bolt, zeta, omni: each once
    runs = ledger.body_runs()
    (again,) = [key for key, n in runs.items() if n > 1]  # the call in flight, same key
    assert runs[again] == 2
    assert again.endswith("/s2/0"), runs
    return said


async def _status(journal: Journal, run_id: str, mend: Callable[[], object]) -> str:
    await anyio.to_thread.run_sync(mend)
    return (await journal.get_run(run_id)).status


async def test_a_heartbeat_refused_by_a_locked_sqlite_file_fails_the_run_resumably(
    tmp_path: Path,
) -> None:
    path = tmp_path / "runs.db"
    journal = await SqliteJournal.open(path, busy_timeout=0.05)
    blocker = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    try:
        said = await _renewal_fails_then_resumes(
            journal,
            tmp_path,
            lambda: blocker.execute("BEGIN EXCLUSIVE"),  # another program holds the file
            lambda: blocker.execute("ROLLBACK"),
        )
    finally:
        blocker.close()
        await journal.close()
    assert "database is locked" in said, said


async def test_a_heartbeat_refused_by_a_stopped_postgres_server_fails_the_run_resumably(
    tmp_path: Path, server: object
) -> None:
    from pg_server import PostgresServer

    assert isinstance(server, PostgresServer)
    journal = await PostgresJournal.open(server.url, reconnect_timeout=0.2)
    try:
        said = await _renewal_fails_then_resumes(journal, tmp_path, server.halt, server.start_again)
    finally:
        await journal.close()
    assert "could not be journaled" in said, said
    assert "Connection refused" in said, said
