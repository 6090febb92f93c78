"""A ``Journal`` of the user's own, written to the older protocol (no ``above=``).

Nested runs pass the caller's lease of the top run as ``above=`` to ``create_run`` and
``acquire``. A journal without it failed deep in the first nested step (a ``TypeError``,
the step failed, the planner replanned in vain); the team now refuses it as it starts,
saying what to add, and a team without nested teams keeps using it as it is.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import pytest

from regiment.errors import ConfigError
from regiment.journal import (
    ApprovalRequested,
    Entry,
    JournaledApproval,
    JournaledCall,
    Lease,
    Record,
    RunCreated,
    RunInfo,
    RunStatus,
    SessionRun,
    SqliteJournal,
)
from regiment.models import ModelResponse

from .durable_team import Ledger, make_office, make_team

pytestmark = pytest.mark.anyio


class OlderJournal:
    """A user's journal over an SQLite file, written before ``above=`` existed."""

    def __init__(self, inner: SqliteJournal) -> None:
        self.inner = inner

    @property
    def where(self) -> str:
        return f"older journal over {self.inner.where}"

    async def create_run(self, run: RunCreated, *, owner: str, ttl: float) -> Lease:
        return await self.inner.create_run(run, owner=owner, ttl=ttl)

    async def acquire(self, run_id: str, *, owner: str, ttl: float) -> Lease:
        return await self.inner.acquire(run_id, owner=owner, ttl=ttl)

    async def renew(self, lease: Lease, *, ttl: float) -> Lease:
        return await self.inner.renew(lease, ttl=ttl)

    async def release(self, lease: Lease) -> None:
        await self.inner.release(lease)

    async def append(self, lease: Lease, record: Record, *, durable: bool = False) -> int:
        return await self.inner.append(lease, record, durable=durable)

    async def append_all(
        self, lease: Lease, records: Iterable[Record], *, durable: bool = False
    ) -> tuple[int, ...]:
        return await self.inner.append_all(lease, records, durable=durable)

    async def flush(self, lease: Lease | None = None) -> None:
        await self.inner.flush(lease)

    async def read(self, run_id: str, *, after: int = 0) -> tuple[Entry, ...]:
        return await self.inner.read(run_id, after=after)

    async def get_run(self, run_id: str) -> RunInfo:
        return await self.inner.get_run(run_id)

    async def list_runs(
        self, *, status: RunStatus | None = None, limit: int | None = None
    ) -> tuple[RunInfo, ...]:
        return await self.inner.list_runs(status=status, limit=limit)

    async def tool_call(
        self, run_id: str, plan_version: int, step_id: str, call_index: int
    ) -> JournaledCall | None:
        return await self.inner.tool_call(run_id, plan_version, step_id, call_index)

    async def model_response(self, run_id: str, call_key: str) -> ModelResponse | None:
        return await self.inner.model_response(run_id, call_key)

    async def approval(self, run_id: str, approval_id: str) -> JournaledApproval | None:
        return await self.inner.approval(run_id, approval_id)

    async def pending_approvals(self, run_id: str | None = None) -> tuple[ApprovalRequested, ...]:
        return await self.inner.pending_approvals(run_id)

    async def session_history(
        self, session: str, *, exclude: str | None = None
    ) -> tuple[SessionRun, ...]:
        return await self.inner.session_history(session, exclude=exclude)

    async def close(self) -> None:
        await self.inner.close()


class CurrentJournal(OlderJournal):
    """The same journal with ``above=`` added, as the refusal says to."""

    async def create_run(
        self, run: RunCreated, *, owner: str, ttl: float, above: Lease | None = None
    ) -> Lease:
        return await self.inner.create_run(run, owner=owner, ttl=ttl, above=above)

    async def acquire(
        self, run_id: str, *, owner: str, ttl: float, above: Lease | None = None
    ) -> Lease:
        return await self.inner.acquire(run_id, owner=owner, ttl=ttl, above=above)


async def test_an_older_journal_is_refused_at_start_for_a_team_with_a_nested_team(
    tmp_path: Path,
) -> None:
    journal = OlderJournal(await SqliteJournal.open(tmp_path / "runs.db"))
    office = make_office(ledger=Ledger(tmp_path))
    try:
        with pytest.raises(ConfigError) as refused:
            async with office.start(journal=journal):  # type: ignore[arg-type]  # (mypy sees it too)
                pytest.fail("the team started with a journal its nested runs cannot use")
        assert await journal.list_runs() == ()  # nothing ran
    finally:
        await journal.close()
    message = str(refused.value)
    assert "nested team (worker 'desk')" in message
    assert "`above: Lease | None = None`" in message
    assert "OlderJournal.create_run and OlderJournal.acquire" in message
    assert not Ledger(tmp_path).lines(Ledger(tmp_path).bodies)


async def test_an_older_journal_still_serves_a_team_without_nested_teams(tmp_path: Path) -> None:
    journal = OlderJournal(await SqliteJournal.open(tmp_path / "runs.db"))
    ledger = Ledger(tmp_path)
    try:
        team = make_team(ledger=ledger)
        async with team.start(journal=journal) as running:  # type: ignore[arg-type]
            result = await running.run("settle the accounts")
        listed = await journal.list_runs()
    finally:
        await journal.close()
    assert result.status == "completed"
    assert [(info.run_id, info.status) for info in listed] == [(result.run_id, "completed")]


async def test_the_journal_with_above_added_runs_the_nested_team(tmp_path: Path) -> None:
    journal = CurrentJournal(await SqliteJournal.open(tmp_path / "runs.db"))
    try:
        async with make_office(ledger=Ledger(tmp_path)).start(journal=journal) as running:
            result = await running.run("settle the accounts via the desk")
    finally:
        await journal.close()
    assert result.status == "completed"
