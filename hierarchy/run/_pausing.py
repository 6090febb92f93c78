"""How a run's planner handles approvals: it records them, and pauses the run
when every step in flight waits for a decision (nothing else can go on).

A part of :class:`~regiment.hierarchy.run._actor.PlannerActor`, kept here so the
actor stays a router: the changes still go through its one door, ``_record``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Collection
from typing import assert_never

from regiment._text import counted
from regiment.actors import ActorContext
from regiment.hierarchy._approvals import (
    ApprovalDesk,
    ApprovalNoticed,
    ApprovalSettled,
    EditJudged,
    NestedStalled,
    StepAt,
)
from regiment.hierarchy._messages import StepReport
from regiment.hierarchy._result import RunStatus
from regiment.hierarchy.run._book import RunBook
from regiment.hierarchy.run._changes import (
    ApprovalAnswered,
    ApprovalAsked,
    ApprovalJudged,
    RunChange,
)
from regiment.hierarchy.run._channel import RunChannel
from regiment.hierarchy.run._guarding import RunGuards
from regiment.hierarchy.run._messages import PlannerMessage
from regiment.hierarchy.run._phase import (
    Done,
    Ending,
    EndPartial,
    EndPaused,
    Executing,
    Phase,
    WindingDown,
)
from regiment.hierarchy.run._runtime import TeamRuntime
from regiment.tools import Deny

__all__ = ("PausesForApprovals",)

# What share of the run's wall_clock budget the answer guards have to judge a partial
# answer: its time is spent (or the other limit that ran out left it little).
PARTIAL_JUDGING = 0.1


class PausesForApprovals:
    """The planner actor's approval handling (mixed into ``PlannerActor``)."""

    _phase: Phase
    _book: RunBook
    _guards: RunGuards
    _team: TeamRuntime
    ctx: ActorContext[PlannerMessage, None]

    def _record(self, change: RunChange) -> None:
        raise NotImplementedError  # PlannerActor's

    def _wind_down(self, ending: Ending) -> None:
        raise NotImplementedError  # PlannerActor's

    def _finish(self, answer: str, status: RunStatus) -> None:
        raise NotImplementedError  # PlannerActor's

    def _on_report(self, report: StepReport) -> Awaitable[None] | None:
        raise NotImplementedError  # PlannerActor's

    async def _on_step_news(
        self, news: StepReport | ApprovalNoticed | ApprovalSettled | EditJudged | NestedStalled
    ) -> None:
        """A step reported, a call of one waits for (or got) a decision, or a run nested
        in one has only waits left; then pause if every step in flight waits for a
        decision. A nested run never pauses by itself: the run above hears of it."""
        if isinstance(news, StepReport):
            if (rest := self._on_report(news)) is not None:
                await rest
            if self._book.approvals.pending:
                self._withdraw_left(news)
            channel = self._book.channel
            desk = channel.desk
            if desk is not None and channel.in_flight is not None:  # a nested run's
                await self._withdraw_nested(desk, news)
                # (no call waits: no news; a top-level run looks again below anyway)
                if desk.nested_waits.waiting:
                    await desk.recheck(StepAt(self._book.run_id, 0, ""))
        elif not isinstance(news, NestedStalled):
            self._on_approval(news)
        if self._book.approvals.pending:  # else nothing waits for a decision: no call made
            self._pause_if_stalled()

    async def _report_rest(self, report: StepReport, rest: Awaitable[None]) -> None:
        """What is left of a report a run that is not nested took as a plain call
        (``_handle_now``): ``rest``, then what ``_on_step_news`` does after a report."""
        await rest
        if self._book.approvals.pending:
            self._after_report(report)

    def _after_report(self, report: StepReport) -> None:
        """A report to a run that is not nested, with requests pending: those of its step
        withdrawn if it is gone, then a pause if every step in flight waits for a decision."""
        self._withdraw_left(report)
        if self._book.approvals.pending:
            self._pause_if_stalled()

    def _show_in_flight(self, channel: RunChannel) -> None:
        """A nested run's channel reads its steps in flight from here (a top run's: no)."""
        if channel.in_flight is not None:
            channel.in_flight = self._in_flight

    def _in_flight(self) -> Collection[tuple[int, str, int]] | None:
        """The steps in flight while the run executes its plan (see ``NestedWaits``)."""
        phase = self._phase
        working = type(phase) is Executing or (type(phase) is WindingDown and phase.draining)
        return self._book.dispatcher.inflight if working else None

    def _on_approval(self, notice: ApprovalNoticed | ApprovalSettled | EditJudged) -> None:
        """Record a request or a decision of this run (or of a team nested in it), or what
        the call's guards made of an edit."""
        if isinstance(self._phase, Done):
            return  # the run has ended; the team's desk keeps the request for a resume
        match notice:
            case ApprovalNoticed(request=request, journaled=journaled):
                self._record(ApprovalAsked(request, journaled))
            case ApprovalSettled(request=r, decision=d, by=by, waited_s=waited, journaled=j):
                if notice.unasked is not None and r.request_id not in self._book.approvals.pending:
                    self._record(ApprovalAsked(r, notice.unasked))  # (it expired untold)
                self._record(ApprovalAnswered(r, d, by, waited, j, notice.judging))
            case EditJudged(request_id=request_id, verdict=verdict):
                self._record(ApprovalJudged(request_id, verdict))
            case _:
                assert_never(notice)

    def _step_gone(self, report: StepReport) -> bool:
        """Whether the step ``report`` ended and the run goes on without it: its requests
        left undecided can never apply. A pause's cut steps keep theirs for the resume; an
        ending run's are refused anyway; another attempt of the step may still ask."""
        if isinstance(self._phase, Done | WindingDown):
            return False
        key = (report.plan_version, report.step_id)
        return not any(k[:2] == key for k in self._book.dispatcher.inflight)

    async def _withdraw_nested(self, desk: ApprovalDesk, report: StepReport) -> None:
        """``_withdraw_left`` for a nested run, whose calls' requests are its top-level
        run's: the desk decides them, and tells the top run at once (not when the step of
        the top run that this run serves ends)."""
        if self._step_gone(report):
            book = self._book
            why = Deny(
                reason=f"withdrawn: step {report.step_id} of plan v{report.plan_version} of "
                f"team '{book.team}' (nested run {book.run_id}) ended ({report.status}) before "
                "this call was decided, so it can never run"
            )
            await desk.withdraw_step(StepAt(book.run_id, report.plan_version, report.step_id), why)

    def _withdraw_left(self, report: StepReport) -> None:
        """The step ``report`` ended while calls of it still wait for decisions, and the run
        goes on (a replan cut the step, say): those requests can never apply, so they are
        withdrawn (denied, saying so), not left pending for a human to decide in vain."""
        book = self._book
        if not self._step_gone(report):
            return
        key = (report.plan_version, report.step_id)
        desk = book.channel.desk
        left = [r for r in book.approvals.pending.values() if (r.plan_version, r.step_id) == key]
        for request in left:
            why = Deny(
                reason=f"withdrawn: step {report.step_id} of plan v{report.plan_version} "
                f"ended ({report.status}) before this call was decided, so it can never run"
            )
            decided = (why, "", False) if desk is None else desk.withdraw(request.request_id, why)
            if decided is not None:
                decision, by, journaled = decided
                self._record(ApprovalAnswered(request, decision, by, 0.0, journaled))

    def _pause_if_stalled(self) -> None:
        """Pause when every step in flight waits for a decision.

        The steps are cancelled; their requests stay pending (and journaled) for a
        resume, so the run's budget clock does not run while a human decides.
        """
        book, phase = self._book, self._phase
        approvals = book.approvals
        draining = type(phase) is WindingDown and phase.draining
        if (
            (type(phase) is Executing or draining)
            and approvals.pending
            and approvals.stalled(book.dispatcher.inflight, self._nested_working)
        ):
            if draining:  # an ending run waits for no decision: its steps are cut
                self._wind_down(phase.ending)  # type: ignore[union-attr]
                return
            if (desk := book.channel.desk) is not None:
                desk.pausing(book.run_id)  # a decision now wakes no call the pause cuts
            self._wind_down(EndPaused())

    def _nested_working(self, version: int, step_id: str) -> bool:
        """Whether the step is served by a nested run that has other work going on."""
        desk = self._book.channel.desk
        return desk is not None and desk.nested_waits.busy((self._book.run_id, version, step_id))

    def _close(self, ending: EndPartial | EndPaused) -> None:
        """End a run that ends partial or paused; with answer guards on the team, a
        partial answer goes through them first (see ``RunGuards.start_partial``)."""
        if isinstance(ending, EndPaused):
            pending = len(self._book.approvals.pending)
            if not pending:  # a nested run: its calls' requests are the top run's
                self._finish("paused: the run it serves waits for approval", "paused")
            else:
                self._finish(f"paused: {counted(pending, 'approval')} pending", "paused")
            return
        book, guards = self._book, self._guards
        if not guards.answer:
            self._finish(book.partial_answer(), "partial")
        elif not guards.judging:  # (a late report ends the run again: it is being judged)
            wall_clock = self._team.budget.wall_clock
            seconds = None if wall_clock is None else wall_clock * PARTIAL_JUDGING
            guards.start_partial(
                self.ctx, book.partial_answer(), book.spending.exhausted or "model_calls", seconds
            )
