"""One run's side of the journal: the run's changes and events, as journal records.

``PlannerActor._record`` hands every change here after applying it; the run
channel hands every event. Both are synchronous and only buffer a record (the
per-step path stays cheap); the actor awaits :meth:`RunJournal.flush` after each
message it handles, and the end of the run is flushed as durable. A write that
fails raises :class:`~regiment.errors.JournalError` from ``flush``, which fails
the run: it never goes on unjournaled. Without a journal none of this exists.
"""

from __future__ import annotations

import hashlib
import os
from datetime import UTC, datetime
from typing import TYPE_CHECKING

import msgspec

from regiment.errors import JournalError
from regiment.hierarchy._messages import StepReport
from regiment.hierarchy.run._changes import (
    CheckRejected,
    ModelCharged,
    PlanAdopted,
    ReportDropped,
    RunAborted,
    RunChange,
    RunFinished,
    StepCommitted,
    StepEnded,
    StepSent,
    ToolCallsRefused,
)
from regiment.journal import (
    EventRecorded,
    Journal,
    Lease,
    ModelCallFinished,
    PlanVersion,
    Record,
    RunCreated,
    StepDispatched,
    StepReported,
)
from regiment.journal import RunFinished as JournalFinished

if TYPE_CHECKING:
    from regiment.hierarchy._result import RunResult
    from regiment.hierarchy._team import Team
    from regiment.hierarchy.events import Event

__all__ = ("UNJOURNALED", "RunJournal", "Unjournaled", "config_hash", "owner_name")

LEASE_TTL = 30.0  # seconds a run's lease lives without a heartbeat


def owner_name() -> str:
    """This process, as a lease owner: host and process id."""
    import socket  # only journaled runs need it; not worth its import time for every run

    return f"{socket.gethostname()}:{os.getpid()}"


def config_hash(team: Team) -> str:
    """A hash of what shapes a team's runs: its name, workers, their tools and models."""
    parts: list[str] = [team.name, str(team.concurrency)]
    for worker in team.workers:
        parts.append(repr(getattr(worker, "name", worker)))
        parts.append(repr(getattr(worker, "instructions", "")))
        for tool in getattr(worker, "tools", ()) or ():
            parts.append(repr(getattr(tool, "name", tool)))
    return hashlib.sha256("\x1f".join(parts).encode()).hexdigest()[:32]


class RunJournal:
    """Buffers one run's records and appends them under the run's lease."""

    __slots__ = ("_calls", "_error", "_journal", "_lease", "_pending", "run_id")

    def __init__(self, journal: Journal, lease: Lease, run_id: str) -> None:
        self._journal = journal
        self._lease = lease
        self.run_id = run_id
        self._pending: list[Record] = []
        self._calls: dict[str, int] = {}
        self._error: JournalError | None = None

    @classmethod
    async def create(
        cls, journal: Journal, team: Team, run_id: str, goal: str, session: str | None, owner: str
    ) -> RunJournal:
        """Record a new run (durably) and own it."""
        created = RunCreated(
            run_id=run_id,
            team=team.name,
            config_hash=config_hash(team),
            goal=goal,
            session=session,
            created_at=datetime.now(UTC),
        )
        lease = await journal.create_run(created, owner=owner, ttl=LEASE_TTL)
        return cls(journal, lease, run_id)

    @property
    def lease(self) -> Lease:
        return self._lease

    def renewed(self, lease: Lease) -> None:
        self._lease = lease

    def note(self, change: RunChange, result: RunResult | None) -> None:
        """Buffer the record ``change`` implies, if any (``result``: the run's, once it has one)."""
        if isinstance(change, ModelCharged):
            self._model_reply(change)
            return
        record = _record_for(self.run_id, change, result)
        if record is not None:
            self._pending.append(record)

    def _model_reply(self, change: ModelCharged) -> None:
        """Buffer a planner-side model response under a key stable across resumes."""
        if change.response is None:
            return
        n = self._calls.get(change.purpose, 0) + 1
        self._calls[change.purpose] = n
        key = f"{change.purpose}/{n}"
        self._pending.append(
            ModelCallFinished(run_id=self.run_id, call_key=key, response=change.response)
        )

    def event(self, event: Event) -> None:
        """Buffer one event of the run, in order."""
        body = msgspec.to_builtins(event)
        self._pending.append(
            EventRecorded(run_id=self.run_id, kind=type(event).__name__, event=body)
        )

    async def flush(self) -> None:
        """Append what is buffered; the run's end is made durable."""
        if self._error is not None or not self._pending:
            return
        records, self._pending = self._pending, []
        durable = any(isinstance(r, JournalFinished) for r in records)
        try:
            await self._journal.append_all(self._lease, records, durable=durable)
        except JournalError as exc:
            self._error = exc
            raise

    async def close(self) -> None:
        """Flush what is left and let go of the run.

        Raises:
            JournalError: a write of this run failed (now or earlier), so the
                journal does not hold the whole run.
        """
        if self._error is None:
            await self.flush()
            await self._journal.release(self._lease)
        if self._error is not None:
            raise JournalError(
                f"run {self.run_id} could not be journaled ({self._error}); its result "
                "is not durable: fix the journal and run the goal again"
            ) from self._error


class Unjournaled:
    """What a run without a journal records: nothing, at the cost of one call."""

    __slots__ = ()

    def note(self, change: RunChange, result: RunResult | None) -> None:
        """Nothing to buffer."""

    async def flush(self) -> None:
        """Nothing to write."""


UNJOURNALED = Unjournaled()


def _record_for(run_id: str, change: RunChange, result: RunResult | None) -> Record | None:
    match change:
        case PlanAdopted(plan=plan):
            body = msgspec.to_builtins(plan)
            return PlanVersion(run_id=run_id, version=plan.version, plan=body)
        case StepSent(assign=assign, worker=worker):
            return StepDispatched(
                run_id=run_id,
                plan_version=assign.plan_version,
                step_id=assign.step.id,
                worker=worker,
                attempt=assign.attempt,
            )
        case StepCommitted(report=report):
            return _reported(run_id, report, committed=True)
        case (
            StepEnded(report=report)
            | CheckRejected(report=report)
            | ToolCallsRefused(report=report)
            | ReportDropped(report=report)
        ):
            return _reported(run_id, report, committed=False)
        case RunFinished(answer=answer, status=status):
            body = msgspec.to_builtins(result) if result is not None else {}
            return JournalFinished(run_id=run_id, status=status, answer=answer, result=body)
        case RunAborted(error=error):
            message = f"{type(error).__name__}: {error}"
            return JournalFinished(run_id=run_id, status="failed", error=message)
        case _:
            return None


def _reported(run_id: str, report: StepReport, *, committed: bool) -> StepReported:
    return StepReported(
        run_id=run_id,
        plan_version=report.plan_version,
        step_id=report.step_id,
        worker=report.worker,
        attempt=report.attempt,
        status=report.status,
        committed=committed,
        output=report.output,
        report=msgspec.to_builtins(report),
    )
