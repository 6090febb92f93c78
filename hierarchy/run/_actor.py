"""The planner actor of one run: it receives, decides, and records.

It is made of parts with one job each: ``RunBook`` (the state: ``PlanVersions``,
``Dispatcher``, ``Rounds``, ``Spending``), ``PhaseCalls`` (the planner-side
model calls), ``Prompting`` (what those calls ask, and reading the planner's
reply), ``Verifier`` (judging a report, running its check), ``RunTrace``
(the run span) and ``EndsRun`` (how the run ends). The actor holds one ``Phase`` and routes each message to the
part that handles it.

Every state change goes through :meth:`PlannerActor._record`: the decisions
here build a ``RunChange`` and record it; nothing else writes the book. The
phase is the actor's control state (what it is waiting for), set only here;
a resumed run can rebuild it from the recorded changes.

Plan versions: a replan marks the current version as being replaced *when it
starts*, so every report of that version arriving afterwards (a slow step still
in flight) is dropped, counted and recorded, never committed. Steps of older
versions still winding down do not hold up the current plan.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import assert_never

from opentelemetry.trace import Span

from regiment.errors import StepFailed
from regiment.hierarchy._approvals import DeskNotice
from regiment.hierarchy._messages import PAUSING, StepReport
from regiment.hierarchy.guard._roles import GuardLog
from regiment.hierarchy.run._book import RunBook
from regiment.hierarchy.run._calls import PhaseCalls
from regiment.hierarchy.run._changes import (
    CheckRejected,
    MemoryAdopted,
    ModelCharged,
    ReplanBegun,
    ReportArrived,
    ReportDropped,
    RunBegan,
    RunChange,
    StepCommitted,
    StepEnded,
    SynthesisBegun,
    ToolCallsRefused,
)
from regiment.hierarchy.run._channel import RunChannel
from regiment.hierarchy.run._critiquing import JudgesRounds, Unasked
from regiment.hierarchy.run._dispatch import Dispatcher, send_now
from regiment.hierarchy.run._ending import EndsRun, why_cancelled
from regiment.hierarchy.run._guarded import GuardedActor
from regiment.hierarchy.run._guarding import RunGuards
from regiment.hierarchy.run._held_steps import held_steps
from regiment.hierarchy.run._journaling import UNJOURNALED
from regiment.hierarchy.run._judge_tape import run_tape
from regiment.hierarchy.run._messages import (
    CancelRun,
    DeadlineReached,
    GaveBack,
    GuardJudged,
    ModelReplied,
    PlannerMessage,
    Purpose,
    StartRun,
)
from regiment.hierarchy.run._pausing import PausesForApprovals
from regiment.hierarchy.run._phase import (
    AskReplan,
    Compressing,
    Critiquing,
    Done,
    EndCancelled,
    EndPartial,
    EndPaused,
    Executing,
    Phase,
    Planning,
    Synthesizing,
    WindingDown,
    replacing_version,
)
from regiment.hierarchy.run._phase_span import SpanFacts
from regiment.hierarchy.run._prompting import Call, Prompting
from regiment.hierarchy.run._rounds import carried_tokens, read_memory
from regiment.hierarchy.run._runtime import TeamRuntime
from regiment.hierarchy.run._step_events import CLUSTER_LOST, cluster_lost
from regiment.hierarchy.run._trace import RunTrace
from regiment.hierarchy.run._turns import TakesTurns
from regiment.hierarchy.run._verify import Verifier
from regiment.models import ModelRequest
from regiment.telemetry import step_ends

__all__ = ("PlannerActor",)


class PlannerActor(EndsRun, TakesTurns, PausesForApprovals, GuardedActor, JudgesRounds):
    """Drives one run from goal to answer."""

    def __init__(
        self, team: TeamRuntime, run_id: str, goal: str, channel: RunChannel, run_span: Span
    ) -> None:
        self._team = team
        self._journal = channel.journal or UNJOURNALED  # one place for the no-journal case
        trace = RunTrace(team.telemetry, run_span)
        if channel.journal is not None and trace.headers:  # traced: see telemetry.HeldEnds
            channel.journal.held = held_steps(channel.journal, step_ends(team.telemetry))
        dispatcher = Dispatcher(team, run_id, trace.headers, channel.fence)
        self._book = book = RunBook(run_id, goal, team, channel, trace, dispatcher)
        if self._journal is UNJOURNALED:  # the door is the book's: a frame fewer a change (#22)
            self._record = book.apply  # type: ignore[method-assign]
        # what its steps draw on when their shares run short
        top_ups, ledger = channel.fence.top_ups, book.spending.ledger
        top_ups.wire(ledger, run_id, dispatcher.unsent, book.emit, dispatcher.waiting_on)
        top_ups.caps = team.model_call_caps.values()  # what a step needs to be sent
        top_ups.deciding = book.approvals.pending  # no step waits for a top-up meanwhile
        started = None
        if channel.journal is not None:  # resumed: calls in flight at the stop were billed
            started = channel.journal.count_spending(ledger, team.critic is not None)
        log = GuardLog(tape=run_tape(channel.journal))  # its judges' replies: journaled
        self._guards = RunGuards(*team.outcome_guards, trace, goal, log, run_id, team.output)
        lender = channel.lender or channel.supervisor  # who runs the calls: not the planner
        replayed = self._journal.replayed
        self._calls = PhaseCalls(team, trace, run_id, replayed, channel, log, lender, started)
        self._verifier = Verifier(team.checks, trace, team.artifacts)
        self._prompting = Prompting(team, goal, run_id, channel.history)
        self._phase: Phase = Planning("plan", self._prompting.first_session(), "initial")
        # What the budget could not pay for while cancelled steps still held their shares
        # (or, nested, the run above's steps): tried again as they give back (``Unasked``).
        self._unasked: tuple[Phase, Unasked] | None = None
        self._show_in_flight(channel)  # a nested run's, to the approvals desk
        if self._journal is UNJOURNALED and channel.in_flight is None:  # nothing to flush,
            self._now_types = _NOW_TYPES  # no desk to tell: a report needs no turn (#22)

    def _record(self, change: RunChange) -> None:
        """The one door for state changes: apply ``change``, emit its events, journal it.

        A run with no journal has only the first two to do: its ``_record`` is then its
        book's ``apply`` itself (set in ``__init__``; three changes a step, #22)."""
        self._book.apply(change)
        if self._journal is not UNJOURNALED:  # without a journal: no hook call at all
            self._journal.note(change, self._book.channel.result)

    def _handle(self, message: PlannerMessage) -> Awaitable[None]:
        if type(message) is StepReport and self._journal is UNJOURNALED:  # most messages:
            return self._on_step_news(message)  # no arms tried, no coroutine of its own (#22)
        return self._handle_any(message)

    async def _handle_any(self, message: PlannerMessage) -> None:
        match message:
            case StepReport() | DeskNotice():
                await self._on_step_news(message)
            case StartRun():
                self._start()
            case ModelReplied():
                await self._on_model_reply(message)
            case CancelRun(reason=reason):
                if not isinstance(self._phase, Done):  # a nested run pauses with its parent
                    self._wind_down(EndPaused() if reason == PAUSING else EndCancelled(reason))
            case DeadlineReached():
                self._exhausted("wall_clock", "the run's wall-clock budget ran out")
            case GuardJudged():
                await self._on_guard_judged(message)
            case GaveBack():
                await self._look_again()
            case _:
                assert_never(message)
        if self._journal is not UNJOURNALED:
            try:
                await self._journal.flush()  # JournalError fails the run
            finally:  # the end, once durable (or not to be: its reader learns at close)
                self._book.channel.deliver_last()

    def _handle_now(self, message: PlannerMessage) -> Awaitable[None] | bool:
        if type(message) is StepReport:  # (_NOW_TYPES): a plain call, in the sender's task
            if (rest := self._on_report(message)) is not None:  # a full mailbox, say
                return self._report_rest(message, rest)
            if self._book.approvals.pending:  # else no call made (#22)
                self._after_report(message)
            return True
        if type(message) is StartRun and self._journal is UNJOURNALED:  # no flush to await
            self._start()
            return True
        if type(message) is CancelRun and not isinstance(self._phase, Done):  # cut its steps
            self._book.dispatcher.cancel_all(self.ctx, why_cancelled(message))
        return False

    async def on_stop(self) -> None:
        self._calls.stop()  # a call in flight in the caller's task (a Lender's) ends too
        if not self._book.channel.done:  # a task of its own failed, or the team is stopping
            self._stopped_early()  # the run's journal.close() writes its end
        self._book.channel.deliver_last()  # not flushed here: journal.close() writes it

    def _start(self) -> None:
        self._record(RunBegan())
        if self._journal is not UNJOURNALED:  # the lease's heartbeat, while the run lives
            self.ctx.start_soon(self._journal.beat, self.ctx.self_ref)
        if (wall_clock := self._team.budget.wall_clock) is not None:
            self._calls.start_deadline(self.ctx, wall_clock, self._book.channel.clock)
        assert isinstance(self._phase, Planning)
        self._ask("plan", self._phase.session.request())

    async def _on_model_reply(self, reply: ModelReplied) -> None:
        phase = self._phase
        if not isinstance(phase, (Planning, Compressing, Critiquing, Synthesizing)):
            return  # the run is winding down or over
        if not self._calls.accept(reply):
            return  # superseded
        self._note_guards()  # what the role's request and reply guards did
        if reply.error is not None or reply.response is None:
            self._failed_call(reply)
            return
        response = reply.response
        self._record(
            ModelCharged(reply.purpose, response.usage, response, reply.calls, reply.unpaid)
        )
        match phase:  # the reply's text read once, where it is read (a plan: by its reader)
            case Planning():
                await self._on_plan_reply(phase, response, reply.span)
            case Compressing(before_tokens=before, then=then):
                self._record(MemoryAdopted(read_memory(response.text, self._book), before))
                if reply.span is not None and reply.span.is_recording():  # still open
                    after = carried_tokens(self._book.versions, self._book.rounds)
                    recorder = self._team.telemetry.recorder
                    recorder.compressed(reply.span, before_tokens=before, after_tokens=after)
                self._enter(self._prompting.call(then, self._book))
            case Critiquing(session=session):
                self._on_critique(session, response.text, reply.span)
            case Synthesizing():
                self._on_synthesis(response.text, reply.unpaid)
            case _:
                assert_never(phase)

    def _on_report(self, report: StepReport) -> Awaitable[None] | None:
        """Apply ``report``: a plain call (no coroutine a step, #22), returning what is left
        to await, if anything (the rest of a dispatch that found a mailbox full, say)."""
        if isinstance(self._phase, Done):
            return None  # the run has ended (its result is recorded): a late report changes nothing
        phase = self._phase  # the caller left (below): no reader follows the run
        left = type(phase) is WindingDown and type(phase.ending) is EndCancelled
        self._record(ReportArrived(report, left))
        phase, versions = self._phase, self._book.versions
        current, rest = report.plan_version == versions.version, None
        if type(phase) is Executing and current:  # the common case, kept cheap
            rest = self._apply(report)
        elif replacing_version(phase) or not current:
            # Events name announced versions: while replanning, the one being replaced.
            self._record(ReportDropped(report, versions.version))
        elif not isinstance(phase, WindingDown):
            rest = self._apply(report)
        elif report.status == "done" or not isinstance(phase.ending, EndPaused):
            # kept as the run ends (Verifier.at_end); a pause's cancelled ones go on at resume
            self._record(self._verifier.at_end(report, versions, phase.ending))
        if rest is None and self._unasked is None and type(self._phase) is not WindingDown:
            return None  # the usual report: nothing follows it (no call to find that out)
        return self._reported() if rest is None else self._reported_after(rest)

    def _wait_for_cancelled(self, call: tuple[Purpose, ModelRequest] | None = None) -> bool:
        """Whether steps the run cancelled (a replan's old tail) still hold their shares:
        then what the budget could not pay for (``call``; ``None``: a step to send, the
        critique check) is tried again as they report, not refused for what they held."""
        if not self._book.dispatcher.inflight:  # a nested run may wait for the run above
            return self._waits_above(call)
        self._unasked = (self._phase, call)
        return True

    # -- planning and dispatch -------------------------------------------------

    def _enter(self, call: Call) -> None:
        """Enter the phase that waits on ``call``, and make the call."""
        self._phase = call.phase
        if isinstance(call.phase, Synthesizing):
            self._record(SynthesisBegun())
        self._ask(call.purpose, call.request)

    def _ask(self, purpose: Purpose, request: ModelRequest) -> None:
        """Start a planner-side model call, if the budget allows one."""
        calls, book, phase = self._calls, self._book, self._phase
        reason = phase.reason if isinstance(phase, Planning) else ""
        facts = SpanFacts(version=book.versions.version, round=book.rounds.round, reason=reason)
        limit = calls.start(self.ctx, purpose, request, facts, book.spending.ledger, self.take_turn)
        if limit is not None and not self._wait_for_cancelled((purpose, request)):
            self._exhausted(limit, f"no budget left for the {purpose} model call{calls.refused}")

    def _dispatch_ready(self) -> Awaitable[None] | None:
        """Send every ready step (within concurrency and budget); then critique or synthesis.
        A plain call (#22): what is left to await (a full mailbox, a resume's replayed
        reports), if anything."""
        if type(self._phase) is not Executing:
            return None
        book = self._book
        versions, dispatcher, ledger = book.versions, book.dispatcher, book.spending.ledger
        sends, held_back = dispatcher.next_sends(versions, ledger, book.goal)
        if held_back is not None and not sends and not dispatcher.running_ids(versions.version):
            if not self._wait_for_cancelled():  # else sent as the cancelled steps report
                detail = dispatcher.unsent_detail(versions, ledger, book.goal, held_back)
                self._exhausted(held_back[0], detail)
            return None
        refs, headers, journal = self._team.worker_refs, book.trace.headers, self._journal
        if sends:  # steps now in flight: the plan is not done (no look at what runs)
            replayed, rest = send_now(sends, self._record, journal, refs, headers)  # (#22)
            return None if rest is None and not replayed else self._sent_rest(replayed, rest)
        # Steps of older versions still winding down do not hold up the current plan.
        if not dispatcher.running_ids(versions.version) and versions.all_committed():
            if book.spending.refused_and_spent():
                self._exhausted("tool_calls", book.spending.refusals())
            else:
                self._after_plan()  # critique the round, or answer
        return None

    def _apply(self, report: StepReport) -> Awaitable[None] | None:  # a plain call (#22)
        """Judge or commit ``report``; what dispatches the steps it readies, if any."""
        step = self._book.versions.step(report.step_id)
        if report.refused_tool_calls and report.status != "budget_exhausted":
            ends = self._book.spending.refused_and_spent(more=report.refused_tool_calls)
            self._record(ToolCallsRefused(report, ends))
            if ends:  # judged (a done step is kept) as the run ends, no step follows from it
                self._record(self._verifier.at_end(report, self._book.versions, EndPartial()))
                self._exhausted("tool_calls", self._book.spending.refusals())
                return None
        artifact = report.worker in self._team.artifacts
        change: StepEnded | CheckRejected | StepCommitted
        if report.status == "done" and step.check is None:  # nothing to judge (#22)
            change = StepCommitted(report, artifact)
        else:
            change = self._verifier.judge(report, step, artifact=artifact)
        self._record(change)
        if type(change) is StepCommitted:  # the hot path: no class pattern tried (#22)
            d, version = self._book.dispatcher, self._book.versions.version
            if d.ready or d.indexed != version or not d.running.get(version):
                return self._dispatch_ready()
            # Nothing it readied and steps of the plan still out: nothing to send, the
            # plan not done (the usual report of a fan-out: no three calls to see it, #22).
            return None
        match change:
            case StepEnded(report=StepReport(status="budget_exhausted", exhausted=limit)):
                self._exhausted(limit or "model_calls", change.detail, drain=True)
            case StepEnded() | CheckRejected():
                _replan_or_fail(self, report, change.detail)
            case _:
                assert_never(change)
        return None


def _replan_or_fail(actor: PlannerActor, report: StepReport, reason: str) -> None:
    """A step that failed (or whose check rejected it): replan, or end the run failed."""
    book = actor._book
    if error := _no_replan(report, reason, book, actor._team.budget.replans):
        actor._fail(error)
        return
    actor._record(ReplanBegun(reason))
    book.dispatcher.cancel_all(actor.ctx, f"plan v{book.versions.version} is being replaced")
    actor._next(AskReplan(reason))


# What an idle planner of a run with no journal, not nested, takes in the sender's task.
_NOW_TYPES = (StartRun, CancelRun, StepReport)


def _no_replan(report: StepReport, reason: str, book: RunBook, allowed: int) -> StepFailed | None:
    """Why ``report``'s failure ends its run with no replan, if it does."""
    if report.error_type == CLUSTER_LOST:  # no replica left anywhere: stop, resumably
        journal = book.channel.journal
        return cluster_lost(report, book.run_id, None if journal is None else journal.store)
    if report.fatal:  # a replan would send the step to the same broken model again
        return _not_replanned(report, reason)
    if not book.spending.ledger.can_replan():
        return _no_replans_left(report, reason, allowed)
    return None


def _no_replans_left(report: StepReport, reason: str, allowed: int) -> StepFailed:
    more = "Budget(replans=...) lets the planner try again"
    if report.status == "timed_out":  # a replan only sends the work to the same limit
        more += f", Worker(step_timeout=...) lets worker '{report.worker}' take longer"
    message = f"{reason}; no replans left (budget allows {allowed}; {more})"
    return StepFailed(message, step_id=report.step_id, worker=report.worker, cause=reason)


def _not_replanned(report: StepReport, reason: str) -> StepFailed:
    message = (
        f"{reason}; the run ends without a replan: worker '{report.worker}' would fail "
        "the same way on any step"
    )
    worker, step = report.worker, report.step_id
    return StepFailed(message, step_id=step, worker=worker, cause=reason, fatal=True)
