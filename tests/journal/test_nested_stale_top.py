"""A nested run started by an owner whose lease of the top run went stale meanwhile.

The office's owner is about to start the billing desk's nested run when another process
takes the office's run over (its lease lapsed: the owner was frozen) and lets it go again
(a pause for approval): the top run has no owner now. The journal let the old owner start
the nested run (no one else held the top run), and its tools ran until its heartbeat of
the top run failed. Its stale lease of the top run says it must stop: it is refused.
"""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

import pytest

from regiment.errors import JournalError, LeaseLost, UnknownRun
from regiment.journal import Lease, RunCreated, SqliteJournal, nested_run_id

from .durable_team import GOAL, Ledger, make_office
from .test_lease_lost import take_over

pytestmark = pytest.mark.anyio


class _TakenOverMeanwhile(SqliteJournal):  # type: ignore[misc]  # (final: a test-only double)
    """A real SQLite journal on which, as a nested run is created, another process takes
    the top run over and lets it go first (through a journal of its own on the file)."""

    path: ClassVar[str]

    async def create_run(
        self, run: RunCreated, *, owner: str, ttl: float, above: Lease | None = None
    ) -> Lease:
        if run.parent is not None:
            await take_over(_TakenOverMeanwhile.path, release=True)
        lease: Lease = await super().create_run(run, owner=owner, ttl=ttl, above=above)
        return lease


async def test_an_owner_whose_top_run_was_taken_over_and_let_go_starts_no_nested_run(
    tmp_path: Path,
) -> None:
    _TakenOverMeanwhile.path = str(tmp_path / "runs.db")
    journal = await _TakenOverMeanwhile.open(_TakenOverMeanwhile.path)
    ledger = Ledger(tmp_path)
    try:
        async with make_office(ledger=ledger).start(journal=journal) as running:
            with pytest.raises(JournalError, match="was taken over by another process") as lost:
                await running.run(GOAL, deps=ledger)
        assert isinstance(lost.value.__cause__, LeaseLost)
        assert ledger.body_runs() == {}  # no tool of the nested run ran
        (info,) = await journal.list_runs()
        nested = nested_run_id(info.run_id, 1, "t1")
        with pytest.raises(UnknownRun):  # never started
            await journal.read(nested)
    finally:
        await journal.close()
