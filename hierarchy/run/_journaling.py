"""One run's side of the journal: the run's changes and events, as journal records.

``PlannerActor._record`` hands every change here once applied, the run channel every event;
both only buffer a record (cheap per step). The actor awaits ``RunJournal.flush`` after each
message (the run's end durably); a failed write raises ``JournalError``: the run fails.
"""

from __future__ import annotations

import contextlib
from datetime import UTC, datetime
from typing import TYPE_CHECKING

import anyio

from regiment.actors import ActorRef
from regiment.errors import ActorStopped, JournalError, LeaseLost
from regiment.hierarchy._in_flight import charge_unanswered, planner_intents
from regiment.hierarchy._messages import AssignStep, StepReport
from regiment.hierarchy._ranges import COMMIT_WAIT, LEASE_TTL
from regiment.hierarchy._replay import NO_REPLAY, Replay, event_record
from regiment.hierarchy.run._changes import (
    ModelCharged,
    ReportArrived,
    RunChange,
)
from regiment.hierarchy.run._config_hash import config_hashes
from regiment.hierarchy.run._hints import resume_advice, taken_over
from regiment.hierarchy.run._messages import CancelRun, PlannerMessage
from regiment.hierarchy.run._record_for import record_for
from regiment.hierarchy.run._replies import Replayed, reply_record
from regiment.hierarchy.run._unreplayed import Replaying, Unreplayed
from regiment.hierarchy.workers._journal_calls import RunCalls
from regiment.journal import (
    ApprovalDecided,
    ApprovalRequested,
    Journal,
    Lease,
    Record,
    RunCreated,
    RunResumed,
    TeamFile,
    deps_hash,
    heartbeat,
)
from regiment.journal import RunFinished as JournalFinished

if TYPE_CHECKING:
    from regiment.hierarchy._budget import BudgetLedger
    from regiment.hierarchy._in_flight import Started
    from regiment.hierarchy._result import RunResult
    from regiment.hierarchy._team import Team
    from regiment.hierarchy.events import Event
    from regiment.hierarchy.run._held_steps import HeldSteps
    from regiment.telemetry import OpenRoot

__all__ = ("LEASE_TTL", "UNJOURNALED", "RunJournal", "Unjournaled", "owner_name")


def owner_name() -> str:
    """This process, as a lease owner: host, process id and when it started (``journal.process_owner``)."""
    from regiment.journal import process_owner  # only journaled runs need it

    return process_owner()


class RunJournal(Replaying):
    """Buffers one run's records and appends them under the run's lease.

    A resumed run carries the journal's :class:`Replay`: the planner's model
    calls and committed steps are replayed from it, and the records the replay
    rebuilds are not written twice.
    """

    __slots__ = (
        "_beating",
        "_calls",
        "_closed",
        "_error",
        "_journal",
        "_lease",
        "_pending",
        "_replay",
        "_ttl",
        "calls",
        "ended",
        "held",
        "open_root",
        "resume",
        "root_span",
        "run_id",
        "top",
        "unreplayed",
    )

    def __init__(
        self,
        journal: Journal,
        lease: Lease,
        run_id: str,
        *,
        replay: Replay = NO_REPLAY,
        deps: object = None,
        ttl: float = LEASE_TTL,
        top: Lease | None = None,
    ) -> None:
        self._ttl = ttl
        self.top = lease if top is None else top  # this process's lease of its top run
        self._journal = journal
        self._lease = lease
        self.run_id = run_id
        self._pending: list[Record] = []
        self._calls: dict[str, int] = {}
        self._error: JournalError | None = None
        self._closed: anyio.Event | None = None  # set once the run has let go of its lease
        self._beating = anyio.CancelScope()  # the heartbeat's: the run's end cancels it
        self._replay = None if replay.empty else replay
        self.unreplayed: Unreplayed | None = None  # a resumed run's (``count_spending``)
        self.calls = RunCalls(run_id, deps, journal, lease, replay)  # the workers' side
        self.resume: tuple[int, str | None] | None = None  # resumed: (number, first traceparent)
        self.open_root: OpenRoot | None = None  # resumed: the root span a crash left open
        self.root_span: str | None = None  # a new nested run's root span's id, journaled
        self.ended: str | None = None  # how the run ended, once its end is on its way in
        self.held: HeldSteps | None = None  # traced: its step spans wait for their reports

    @classmethod
    async def create(
        cls,
        journal: Journal,
        team: Team,
        run_id: str,
        goal: str,
        session: str | None,
        owner: str,
        deps: object = None,
        *,
        ttl: float = LEASE_TTL,
        trace: tuple[str | None, str | None] = (None, None),
        team_file: TeamFile | None = None,
        parent: str | None = None,
        top: Lease | None = None,
    ) -> RunJournal:
        """Record a new run (durably) and own it (``trace``: its root span's ``traceparent``
        and its parent's; ``parent``: the run whose step a nested run serves; ``top``: a
        nested run's owner's lease of its top run, refused by the journal if stale)."""
        config_hash, parts = config_hashes(team)
        created = RunCreated(
            run_id=run_id,
            team=team.name,
            config_hash=config_hash,
            goal=goal,
            session=session,
            created_at=datetime.now(UTC),
            trace=trace[0],
            trace_parent=trace[1],
            team_file=team_file,
            parent=parent,
            deps_hash=deps_hash(deps),
            config_parts=parts,
        )
        if top is None:  # (a top run's: asked as of old, so journals without ``above`` work)
            lease = await journal.create_run(created, owner=owner, ttl=ttl)
        else:
            lease = await journal.create_run(created, owner=owner, ttl=ttl, above=top)
        return cls(journal, lease, run_id, deps=deps, ttl=ttl, top=top)

    @property
    def lease(self) -> Lease:
        return self._lease

    @property
    def unrecorded(self) -> bool:
        """Whether a write of the run failed (or another process took the run over): the
        journal does not hold how it ended, so a resume finishes it."""
        return self._error is not None

    @property
    def store(self) -> Journal:
        """The journal the run is recorded in (its nested runs are recorded there too)."""
        return self._journal

    @property
    def ttl(self) -> float:
        return self._ttl

    def buffer(self, record: Record) -> None:
        """Append ``record`` with the run's next flush."""
        self._pending.append(record)

    async def decided(self, record: ApprovalDecided) -> bool:
        """Append a decision on this run now, durably; ``False`` once the run lets go of it
        (check ``ended`` first: a decision cannot follow the run's end)."""
        if self._closed is not None:
            await self._closed.wait()  # then the journal takes it under a lease of its own
            return False
        await self._journal.append(self._lease, record, durable=True)
        return True

    def note(self, change: RunChange, result: RunResult | None) -> None:
        """Buffer the record ``change`` implies, if any (``result``: the run's, once it has one)."""
        if isinstance(change, ModelCharged):
            self._model_reply(change)
            return
        if type(change) is ReportArrived and self.unreplayed is not None:
            self.unreplayed.reported(change.report)  # what its attempt never replayed
        record = record_for(self.run_id, change, result)
        if record is not None:
            if type(record) is JournalFinished:  # nothing may follow it: no decision either
                self.ended = record.status
                self._beating.cancel()  # the lease has 2/3 of its ttl left to write it in
            if self.held is not None:
                self.held.noted(record)
            self._add(record)

    def _add(self, record: Record) -> None:
        if self._replay is None or not self._replay.already(record):
            self._pending.append(record)

    def _model_reply(self, change: ModelCharged) -> None:
        """Buffer a planner-side model response under a key stable across resumes."""
        if change.response is None:
            return
        n = self._calls.get(change.purpose, 0) + 1
        self._calls[change.purpose] = n
        key = f"{change.purpose}/{n}"
        if self.unreplayed is not None:  # a replayed reply is charged as the planner takes it
            self.unreplayed.took(key)
        self._add(reply_record(self.run_id, key, change))

    def count_spending(self, ledger: BudgetLedger, critic: bool = False) -> Started | None:
        """Charge a resumed run's calls in flight; what journals a call's intent
        (``_in_flight``; ``critic``: the team has one, whose calls journal theirs)."""
        if self._replay is not None:
            charge_unanswered(self._replay, ledger.spent, self.run_id)
            self.unreplayed = Unreplayed(self._replay, ledger.spent)  # charged as it ends
        started = planner_intents(self.calls, self._calls, ledger.budget, critic)
        self.calls.holds_calls = ledger.budget.model_calls is not None  # its steps' calls too
        return started

    def event(self, event: Event) -> None:
        """Buffer one event of the run, in order."""
        self._add(event_record(self.run_id, event))

    async def beat(self, planner: ActorRef[PlannerMessage, None]) -> None:
        """Keep the lease alive until the run's end is noted (not cancelled by its actor's stop:
        anyio would leave a cycle). A failure fails the run now, not at its next change (a run
        on a slow tool went on as a zombie): the ``planner`` is told to stop, then fails."""
        try:
            with self._beating:
                await heartbeat(self._journal, self._lease, ttl=self._ttl, commit_every=COMMIT_WAIT)
        except JournalError as exc:
            self.calls.error = self.calls.error or exc
            reason = f"this process can no longer write the run's journal: {exc}"
            with contextlib.suppress(ActorStopped):  # the run is over already
                await planner.send(CancelRun(reason=reason))

    async def flush(self) -> None:
        """Append what is buffered; the run's end is made durable."""
        if self._error is None and self.calls.error is not None:
            self._error = self.calls.error
            raise self._error  # a worker's write, or the heartbeat, failed
        if self._error is not None or not self._pending:
            return
        records, self._pending = self._pending, []
        # The end, a pending approval (the process may exit while it waits), a resume (one
        # killed before its next durable write counts: the next numbers itself after it).
        durable = any(isinstance(r, _DURABLE) for r in records)
        try:
            seqs = await self._journal.append_all(self._lease, records, durable=durable)
        except JournalError as exc:
            self._error = exc
            raise
        if self.held is not None:  # its step spans go out as their reports are committed
            self.held.appended(records, seqs)

    async def close(self) -> None:
        """Flush what is left and let go of the run.

        Raises:
            JournalError: a write of this run failed (now or earlier), so the
                journal does not hold the whole run.
        """
        closed = self._closed = anyio.Event()
        try:
            if self._error is None:
                with contextlib.suppress(JournalError):
                    await self.flush()
            if self._error is None:
                await self._journal.release(self._lease)
            else:  # the journal forgets the lease and what refused its writes (said below,
                # not by its release; for a resume, the journal lets go of the run's lease)
                with contextlib.suppress(JournalError):
                    await self._journal.release(self._lease)
        finally:
            closed.set()
            if self.held is not None:  # failed: the spans it cannot report, the resume ends
                self.held.let_go(self._error is not None)
        if isinstance(self._error, LeaseLost):  # another process owns the run now
            said = taken_over(self.run_id, self._error, self._journal)
            raise JournalError(said) from self._error
        if self._error is not None:
            raise JournalError(
                f"run {self.run_id} could not be journaled ({self._error}); it stopped "
                "there, and what the journal holds of it is kept: once the journal can be "
                f"written again, resume it ({resume_advice(self._journal, self.run_id)}): "
                "what it committed is not done again"
            ) from self._error


class Unjournaled:
    """What a run without a journal records: nothing, at the cost of one call."""

    __slots__ = ()
    unreplayed = None  # nothing journaled before

    def note(self, change: RunChange, result: RunResult | None) -> None:
        """Nothing to buffer."""

    def replayed(self, purpose: str) -> Replayed | None:
        """Nothing to replay."""
        return None

    def committed(self, assign: AssignStep) -> tuple[StepReport, int | None] | None:
        """Nothing committed before."""
        return None

    async def beat(self, planner: object = None) -> None:
        """No lease to keep."""

    async def flush(self) -> None:
        """Nothing to write."""


UNJOURNALED = Unjournaled()

_DURABLE = (JournalFinished, ApprovalRequested, RunResumed)
