"""A run that ended on its journal's error kept its lease until it lapsed, so resuming it
in the same process, once the journal worked again, was ``LeaseHeld`` for up to
``lease_ttl`` (30 s): the journal now lets go of a lease whose writes failed before it
hands the run out again (and, best-effort, as it closes), so the resume goes on at once.

A real failure: a PostgreSQL server stopped with ``pg_ctl stop`` (then started again)
while the run writes (an SQLite file locked past its ``busy_timeout``:
``tests/hierarchy/test_journaled_run.py``).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import anyio
import pytest

from regiment.errors import JournalError
from regiment.journal import Journal, PostgresJournal

from .durable_team import GOAL, Ledger, make_team
from .test_postgres_down import server

pytestmark = pytest.mark.anyio

__all__ = ("server",)  # the fixture, shared


async def _fails_then_resumes(
    journal: Journal, tmp_path: Path, break_it: Callable[[], object], mend: Callable[[], object]
) -> None:
    """Run the durable team until its tool charges bolt (s2), break the journal there,
    mend it once the run has failed, and resume the run in the same started team."""
    ledger = Ledger(tmp_path)

    async def stop(where: str) -> None:
        if where == "tool:s2" and len(ledger.lines(ledger.bodies)) == 2:
            await anyio.to_thread.run_sync(break_it)

    async with make_team(stop, ledger=ledger).start(journal=journal) as running:
        with pytest.raises(JournalError, match="could not be journaled") as failed:
            await running.run(GOAL, deps=ledger)
        run_id = str(failed.value).split()[1]
        await anyio.to_thread.run_sync(mend)
        result = await running.resume(run_id, deps=ledger)
    assert result.status == "completed"
    effects = [line[0] for line in ledger.lines(ledger.effects)]
    assert len(effects) == len(set(effects)) == 4  # acme, bolt, zeta, omni: each once


async def test_a_run_failed_by_a_stopped_postgres_server_resumes_at_once_once_it_is_back(
    tmp_path: Path, server: object
) -> None:
    from pg_server import PostgresServer

    assert isinstance(server, PostgresServer)
    journal = await PostgresJournal.open(server.url, reconnect_timeout=0.2)
    try:
        await _fails_then_resumes(journal, tmp_path, server.halt, server.start_again)
    finally:
        await journal.close()
