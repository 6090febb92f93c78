"""The book of one run: its parts' state, changed only by applying a ``RunChange``.

``RunBook.apply`` is a ``match`` over the change union: each arm updates the
parts it concerns and emits the events the change implies, so the event stream
and the state can never disagree.
"""

from __future__ import annotations

from typing import assert_never, final

from msgspec.structs import replace

from regiment.hierarchy._budget import BudgetLedger
from regiment.hierarchy._result import RunResult, RunStatus
from regiment.hierarchy.events import (
    BudgetExhausted,
    ContextCompressed,
    CritiqueCompleted,
    Event,
    PlanCreated,
    Replanned,
    RoundStarted,
    RunCompleted,
    RunStarted,
    StaleReportDropped,
    StepCompleted,
    StepDispatched,
    SynthesisStarted,
)
from regiment.hierarchy.run import _logs as logs
from regiment.hierarchy.run._approvals import RunApprovals
from regiment.hierarchy.run._calls import ROLES
from regiment.hierarchy.run._changes import (
    ApprovalAnswered,
    ApprovalAsked,
    ApprovalJudged,
    BudgetRanOut,
    CheckRejected,
    CritiqueJudged,
    GuardsNoted,
    MemoryAdopted,
    ModelCharged,
    PlanAdopted,
    ReplanBegun,
    ReportArrived,
    ReportDropped,
    RoundBegun,
    RunAborted,
    RunBegan,
    RunChange,
    RunFinished,
    StepCommitted,
    StepEnded,
    StepSent,
    SynthesisBegun,
    ToolCallsRefused,
)
from regiment.hierarchy.run._channel import RunChannel
from regiment.hierarchy.run._dispatch import Dispatcher
from regiment.hierarchy.run._guarding import note_events
from regiment.hierarchy.run._rounds import Rounds, carried_tokens
from regiment.hierarchy.run._runtime import TeamRuntime
from regiment.hierarchy.run._spending import Spending
from regiment.hierarchy.run._step_events import (
    check_failed,
    errored,
    failed,
    report_events,
    share_refused,
)
from regiment.hierarchy.run._structured import shaped
from regiment.hierarchy.run._trace import RunTrace
from regiment.hierarchy.run._versions import PlanVersions
from regiment.models import Usage
from regiment.telemetry import trace_id_hex
from regiment.tools import ApprovalRequest

__all__ = ("RunBook",)


@final
class RunBook:
    """The state of one run, held by its parts, and the events it has emitted."""

    def __init__(
        self,
        run_id: str,
        goal: str,
        team: TeamRuntime,
        channel: RunChannel,
        trace: RunTrace,
        dispatcher: Dispatcher,
    ) -> None:
        self.run_id = run_id
        self.goal = goal
        self.team, self.shape = team.name, team.output
        self.channel = channel
        self.trace = trace
        self.versions = PlanVersions()
        self.dispatcher = dispatcher
        self.spending = Spending(BudgetLedger(team.budget))
        self.rounds = Rounds()
        self.approvals = RunApprovals(run_id)
        self.events: list[Event] = []

    def apply(self, change: RunChange) -> None:
        """Apply one change to the parts and emit what it implies."""
        # A step's three changes by exact type (final classes): the hot path. No
        # ``cast`` to narrow them: it is a Python call each (issue #22).
        kind = type(change)
        if kind is ReportArrived:
            _arrived(self, change)  # type: ignore[arg-type]
        elif kind is StepCommitted:
            _committed(self, change)  # type: ignore[arg-type]
        elif kind is StepSent:
            _sent(self, change)  # type: ignore[arg-type]
        else:
            self._apply(change)

    def _apply(self, change: RunChange) -> None:
        run_id = self.run_id
        # Arms in the order of what every run applies here (a class pattern is an
        # isinstance each): a step's changes take the fast path in ``apply``.
        match change:
            case ModelCharged(purpose=purpose, usage=usage, calls=calls):
                self.spending.ledger.spent.charge(ROLES[purpose], usage, calls)
            case RunBegan():
                self.emit(RunStarted(run_id=run_id, goal=self.goal, team=self.team))
            case PlanAdopted():
                self._adopt(change)
            case SynthesisBegun():
                committed = self.versions.held()
                self.emit(SynthesisStarted(run_id=run_id, committed_steps=committed))
            case RunFinished() | RunAborted():
                self._end(change)
            case ReportDropped() | StepEnded() | CheckRejected():
                self._not_committed(change)
            case ToolCallsRefused(report=r, ends_run=ends):
                self.spending.refused_tool_calls += r.refused_tool_calls
                if not ends:  # else the run ends: the planner judges the report as it does
                    self.trace.budget_exhausted("tool_calls", r.step_id)
                    self.emit(share_refused(run_id, r))
            case ReplanBegun():
                self.spending.ledger.replans += 1
            case CritiqueJudged() | RoundBegun():
                self._judged(change)
            case MemoryAdopted():
                self._compressed(change)
            case BudgetRanOut():
                self._ran_out(change)
            case GuardsNoted(notes=notes):
                self.emit_all(note_events(run_id, notes))
            case ApprovalAsked() | ApprovalAnswered() | ApprovalJudged():
                self.approvals.apply(change, self.emit)
                self.channel.fence.top_ups.wake()  # a step waiting for a top-up looks again
            case StepSent():
                _sent(self, change)
            case ReportArrived():
                _arrived(self, change)
            case StepCommitted():
                _committed(self, change)
            case _:
                assert_never(change)

    def _ran_out(self, change: BudgetRanOut) -> None:
        self.spending.exhausted = change.limit
        self.channel.fence.top_ups.stop(drain=change.drain)  # steps left finish
        logs.budget_exhausted(self.run_id, change.limit, change.detail)
        self.trace.budget_exhausted(change.limit)
        self.emit(BudgetExhausted(run_id=self.run_id, limit=change.limit, detail=change.detail))

    def _judged(self, change: CritiqueJudged | RoundBegun) -> None:
        run_id = self.run_id
        match change:
            case CritiqueJudged(verdict=verdict):
                self.rounds.verdicts.append(verdict)
                self.emit(CritiqueCompleted(run_id=run_id, verdict=verdict))
            case RoundBegun(round=round, feedback=feedback):
                self.rounds.round = round
                self.emit(RoundStarted(run_id=run_id, round=round, feedback=feedback))
            case _:
                assert_never(change)

    def _not_committed(self, change: ReportDropped | StepEnded | CheckRejected) -> None:
        versions, run_id, r = self.versions, self.run_id, change.report
        match change:
            case ReportDropped(current_version=current):
                versions.drop(r)
                self.trace.stale_report(r, current_version=current)
                logs.stale_report_dropped(run_id, r, current)
                self.emit(
                    StaleReportDropped(
                        run_id=run_id,
                        report_version=r.plan_version,
                        current_version=current,
                        step_id=r.step_id,
                        status=r.status,
                        tool_outcomes=r.tool_outcomes,
                    )
                )
            case StepEnded(quiet=quiet):
                versions.reports.append(r)
                if r.status != "budget_exhausted" and not quiet:
                    self.emit(errored(run_id, r))
                    if r.status in ("failed", "timed_out"):  # not a cancel we asked for
                        logs.step_ended_badly(run_id, r)
            case CheckRejected(check=check, reason=reason):
                versions.reports.append(r)
                self.emit(check_failed(run_id, r, check, reason))
                versions.reject(r, check, reason)  # kept as evidence for the replan
                self.dispatcher.committed(r)
            case _:
                assert_never(change)

    def _adopt(self, change: PlanAdopted) -> None:
        versions, plan, old = self.versions, change.plan, change.replaced
        again = versions.adopt(plan, change.added)  # rejected steps it runs again
        kept = tuple(versions.committed)
        if change.kind == "round":
            self.rounds.added = len(change.added)
        if change.kind == "replan" and old is not None:
            gone = versions.committed.keys() | again  # a rejected step run again is in added
            removed = tuple(s for s in old.steps if s.id not in gone)
            self.emit(
                Replanned(
                    run_id=self.run_id,
                    old_version=old.version,
                    new_version=plan.version,
                    reason=plan.reason,
                    kept=kept,
                    removed=removed,
                    added=change.added,
                )
            )
        self.emit(PlanCreated(run_id=self.run_id, plan=plan))

    def _compressed(self, change: MemoryAdopted) -> None:
        self.versions.memory = change.memory
        self.emit(
            ContextCompressed(
                run_id=self.run_id,
                before_tokens=change.before_tokens,
                after_tokens=carried_tokens(self.versions, self.rounds),
                kept_step_ids=tuple(change.memory.facts),
            )
        )

    def emit(self, event: Event) -> None:  # (spelled out in _committed and _sent: #22)
        self.events.append(event)
        channel = self.channel
        if channel.streaming or channel.journal is not None:  # else only the result has it
            channel.emit(event)

    def emit_all(self, events: list[Event]) -> None:
        for event in events:
            self.emit(event)

    def _close(self, event: Event) -> None:
        self.events.append(event)
        self.channel.close(event)

    def _end(self, change: RunFinished | RunAborted) -> None:
        """Close the channel with the run's last event."""
        self.approvals.unjudged(self.emit)  # (edits its guards did not get to judge)
        match change:
            case RunFinished(answer=answer, status=status):
                result = shaped(self.shape, self.result(answer, status))
                self.channel.result = result
                self._close(RunCompleted(run_id=self.run_id, result=result))
            case RunAborted(error=error):
                self.channel.error = error
                self.channel.tally = tally = self.result("", "partial")
                error.failed = ended = failed(tally, error)  # run()'s caller gets it too
                self._close(ended)
            case _:
                assert_never(change)

    def answer(self, text: str) -> str:
        """The synthesiser's answer, then the artefacts (a structured one: its JSON alone)."""
        return "\n\n".join([text.strip(), *([] if self.shape else self.versions.artifacts)]).strip()

    def partial_answer(self) -> str:
        """The answer of a run whose budget ran out: what it committed, verbatim."""
        exhausted, versions = self.spending.exhausted or "", self.versions
        answer = f"Partial result (budget exhausted: {exhausted}).\n" + versions.outputs_told()
        return "\n\n".join([answer, *versions.artifacts])

    def result(self, answer: str, status: RunStatus) -> RunResult:
        versions, spending = self.versions, self.spending
        spent, by_role = spending.ledger.spent, spending.usage_by_role
        # At most 15 keywords (more: a dict built and unpacked, #22); _rarer adds the rest.
        result = RunResult(
            run_id=self.run_id,
            goal=self.goal,
            answer=answer,
            status=status,
            plans=tuple(versions.plans),
            steps=tuple(versions.reports),
            committed=versions.held(),
            rejected=tuple(versions.rejected),
            artifacts=tuple(versions.artifacts),
            usage_by_role=by_role,
            usage=spent.total(),
            model_calls=spent.model_calls,
            tool_calls=spent.tool_calls,
            trace_id=trace_id_hex(self.trace.span),
            events=tuple(self.events),
        )
        pending = tuple(self.approvals.pending.values()) if status == "paused" else ()
        return _rarer(result, versions, spending, self.rounds, pending)


def _committed(book: RunBook, change: StepCommitted) -> None:
    """A step's report was committed: its result stands; the steps waiting on it may go."""
    r, versions, dispatcher = change.report, book.versions, book.dispatcher
    versions.reports.append(r)
    versions.commit(r)
    if r.step_id in dispatcher.dependents:  # a call only if a step waits on it (#22)
        dispatcher.committed(r)
    if change.artifact:
        versions.artifacts.append(r.output)
    if change.quiet:
        return
    event = StepCompleted(
        run_id=book.run_id,
        plan_version=r.plan_version,
        step_id=r.step_id,
        worker=r.worker,
        output=r.output,
        usage=r.usage,
    )
    book.events.append(event)  # emitted here: no call a step for it (``RunBook.emit``, #22)
    if (channel := book.channel).streaming or channel.journal is not None:
        channel.emit(event)


def _sent(book: RunBook, change: StepSent) -> None:
    """A step went to a worker: it is in flight."""
    a, worker = change.assign, change.worker
    book.dispatcher.sent(a, worker)
    event = StepDispatched(
        run_id=book.run_id,
        plan_version=a.plan_version,
        step_id=a.step.id,
        worker=worker,
        attempt=a.attempt,
    )
    book.events.append(event)  # emitted here: no call a step for it (``RunBook.emit``, #22)
    if (channel := book.channel).streaming or channel.journal is not None:
        channel.emit(event)


def _arrived(book: RunBook, change: ReportArrived) -> None:
    """A dispatched step reported: it is no longer in flight; charge what it spent."""
    r = change.report
    book.dispatcher.reported(r)
    spending = book.spending
    # the key the fan-out reserved under: (version, step, attempt)
    if (ledger := spending.ledger).reserved:  # none with no limit (BudgetLedger.free)
        ledger.release((r.plan_version, r.step_id, r.attempt))
    ledger.spent.charge(r.worker, r.usage, r.model_calls, r.tool_calls)
    if r.estimated != _NOTHING:  # a nested run's calls cut in flight (at their most)
        ledger.spent.count_estimated(r.estimated)
    # Whatever the report's version; none when no reader follows the run (its caller left),
    # as the step's own end is told to none (``Verifier.at_end``).
    if (r.tool_outcomes or r.guardrails) and not change.quiet:
        book.emit_all(report_events(r))


_NOTHING = Usage()  # what a run estimated, as a rule


def _rarer(
    result: RunResult,
    versions: PlanVersions,
    spending: Spending,
    rounds: Rounds,
    pending: tuple[ApprovalRequest, ...],
) -> RunResult:
    """``result`` with the fields most runs leave at their defaults, if any is not."""
    estimated = spending.ledger.spent.estimated
    if (
        rounds.round == 1
        and not (versions.stale_dropped or spending.exhausted or rounds.verdicts or pending)
        and versions.memory is None
        and estimated == _NOTHING
    ):
        return result
    return replace(
        result,
        stale_reports_dropped=versions.stale_dropped,
        budget_exhausted=spending.exhausted,
        rounds=rounds.round,
        verdicts=tuple(rounds.verdicts),
        memory=versions.memory,
        pending_approvals=pending,
        estimated_usage=estimated,
    )
