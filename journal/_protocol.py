"""The one small interface every journal backend implements."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol, runtime_checkable

from regiment.journal._records import ApprovalRequested, Record, RunCreated
from regiment.journal._views import (
    Entry,
    JournaledApproval,
    JournaledCall,
    Lease,
    RunInfo,
    RunStatus,
    SessionRun,
)
from regiment.models import ModelResponse

__all__ = ("Journal",)


@runtime_checkable
class Journal(Protocol):
    """Where runs are recorded: ``MemoryJournal``, ``SqliteJournal``, ``PostgresJournal``.

    Every method is async and runs on asyncio and trio. Writes carry the
    ``Lease`` that ``create_run`` or ``acquire`` returned; a write whose fencing
    token is stale raises ``LeaseLost``. Anything the storage cannot do raises
    ``JournalError``.
    """

    @property
    def where(self) -> str:
        """The file or database, as error messages name it (never with a password)."""
        ...

    async def create_run(
        self, run: RunCreated, *, owner: str, ttl: float, above: Lease | None = None
    ) -> Lease:
        """Record a new run durably (sequence number 1) and lease it to ``owner`` for ``ttl`` s
        (``LeaseLost`` for a nested run whose top-level run another owner holds, or, given
        ``above``, the caller's lease of that top run, when that lease is not its current
        one: the run was taken over since, even if no one holds it now)."""
        ...

    async def acquire(
        self, run_id: str, *, owner: str, ttl: float, above: Lease | None = None
    ) -> Lease:
        """Take a run over (resume, a decision on an approval; ``above``: for a nested run
        taken up by the owner of its top run, that owner's lease of the top run).

        The leases its previous owner held on its nested runs (see ``nested_run_id``) are
        taken with it: that owner's writes to them are refused from then on, and the
        new owner acquires them at once.

        Raises:
            LeaseHeld: another owner's lease is alive (for a nested run: its own, or its
                top-level run's).
            LeaseLost: ``above`` is stale: the top run was taken over since.
            JournalError: no such run, or it has finished.
        """
        ...

    async def renew(self, lease: Lease, *, ttl: float) -> Lease:
        """The heartbeat: the same lease, expiring ``ttl`` s from now. ``LeaseLost`` if taken over."""
        ...

    async def release(self, lease: Lease) -> None:
        """Commit what the lease wrote and give the run up (it lists as stalled until resumed)."""
        ...

    async def append(self, lease: Lease, record: Record, *, durable: bool = False) -> int:
        """Append one record and return its sequence number.

        Records are committed in groups. With ``durable=True`` the call returns
        only once this record (and every one before it) is committed and on the disk
        (an SQLite journal fsyncs that commit, unless opened with ``synchronous="off"``):
        use it for a record that must survive a crash, of the process or the machine,
        before a side effect, like a tool call intent.
        """
        ...

    async def append_all(
        self, lease: Lease, records: Iterable[Record], *, durable: bool = False
    ) -> tuple[int, ...]:
        """Append several records of one run, in order; their sequence numbers."""
        ...

    async def flush(self, lease: Lease | None = None) -> None:
        """Commit everything appended so far; with ``lease``, raise what refused its writes."""
        ...

    async def read(self, run_id: str, *, after: int = 0) -> tuple[Entry, ...]:
        """The run's records after sequence number ``after``, in order."""
        ...

    async def get_run(self, run_id: str) -> RunInfo:
        """One run's listing; ``JournalError`` if the journal has no such run."""
        ...

    async def list_runs(
        self, *, status: RunStatus | None = None, limit: int | None = None
    ) -> tuple[RunInfo, ...]:
        """Top-level runs, newest first, optionally only those of one status (a nested
        team's run is not listed: ``get_run`` and ``read`` take its id, see ``nested_run_id``)."""
        ...

    async def tool_call(
        self, run_id: str, plan_version: int, step_id: str, call_index: int
    ) -> JournaledCall | None:
        """The journaled intent and result of one tool call; ``None`` if it never started."""
        ...

    async def model_response(self, run_id: str, call_key: str) -> ModelResponse | None:
        """The journaled response of one model call, to replay instead of re-sending."""
        ...

    async def approval(self, run_id: str, approval_id: str) -> JournaledApproval | None:
        """The journaled request and decision of one approval; ``None`` if it was never asked.

        A look-up by key (the request's and the decision's records only), not a scan.
        """
        ...

    async def pending_approvals(self, run_id: str | None = None) -> tuple[ApprovalRequested, ...]:
        """Approval requests still waiting for a decision (of one run, or of all runs)."""
        ...

    async def session_history(
        self, session: str, *, exclude: str | None = None
    ) -> tuple[SessionRun, ...]:
        """The session's runs, oldest first: goals, answers, committed step outputs."""
        ...

    async def close(self) -> None:
        """Commit what is buffered and close the file or connection."""
        ...
