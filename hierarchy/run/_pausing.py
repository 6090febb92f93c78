"""How a run's planner handles approvals: it records them, and pauses the run
when every step in flight waits for a decision (nothing else can go on).

A part of :class:`~regiment.hierarchy.run._actor.PlannerActor`, kept here so the
actor stays a router: the changes still go through its one door, ``_record``.
"""

from __future__ import annotations

from typing import assert_never

from regiment.hierarchy._approvals import ApprovalNoticed, ApprovalSettled
from regiment.hierarchy._messages import StepReport
from regiment.hierarchy._result import RunStatus
from regiment.hierarchy.run._book import RunBook
from regiment.hierarchy.run._changes import ApprovalAnswered, ApprovalAsked, RunChange
from regiment.hierarchy.run._phase import Done, Ending, EndPartial, EndPaused, Executing, Phase

__all__ = ("PausesForApprovals",)


class PausesForApprovals:
    """The planner actor's approval handling (mixed into ``PlannerActor``)."""

    _phase: Phase
    _book: RunBook

    def _record(self, change: RunChange) -> None:
        raise NotImplementedError  # PlannerActor's

    def _wind_down(self, ending: Ending) -> None:
        raise NotImplementedError  # PlannerActor's

    async def _on_report(self, report: StepReport) -> None:
        raise NotImplementedError  # PlannerActor's

    async def _on_step_news(self, news: StepReport | ApprovalNoticed | ApprovalSettled) -> None:
        """A step reported, or a call of one waits for (or got) a decision; then pause
        if every step in flight waits for a decision."""
        if isinstance(news, StepReport):
            await self._on_report(news)
        else:
            self._on_approval(news)
        self._pause_if_stalled()

    def _on_approval(self, notice: ApprovalNoticed | ApprovalSettled) -> None:
        """Record a request or a decision of this run (or of a team nested in it)."""
        if isinstance(self._phase, Done):
            return  # the run has ended; the team's desk keeps the request for a resume
        match notice:
            case ApprovalNoticed(request=request, journaled=journaled):
                self._record(ApprovalAsked(request, journaled))
            case ApprovalSettled(request=r, decision=d, by=by, waited_s=waited, journaled=j):
                self._record(ApprovalAnswered(r, d, by, waited, j))
            case _:
                assert_never(notice)

    def _pause_if_stalled(self) -> None:
        """Pause when every step in flight waits for a decision.

        The steps are cancelled; their requests stay pending (and journaled) for a
        resume, so the run's budget clock does not run while a human decides.
        """
        book = self._book
        approvals = book.approvals
        if (
            type(self._phase) is Executing
            and approvals.pending
            and approvals.stalled(book.dispatcher.inflight)
        ):
            self._wind_down(EndPaused())

    def _closing(self, ending: EndPartial | EndPaused) -> tuple[str, RunStatus]:
        """The answer and status of a run that ends partial or paused."""
        if isinstance(ending, EndPaused):
            pending = len(self._book.approvals.pending)
            if not pending:  # a nested run: its calls' requests are the top run's
                return "paused: the run it serves waits for approval(s)", "paused"
            return f"paused: {pending} approval(s) pending", "paused"
        return self._book.partial_answer(), "partial"
