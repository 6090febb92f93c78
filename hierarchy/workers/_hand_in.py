"""How a step's report goes back to the planner that assigned the step.

The usual way (``StepActor._steps``, spelled out there) is ``send_here``: an idle planner
handles the report in the runner's own task, as a turn of its own (see the
planner's ``TakesTurns``), so the planner's task need not wake for it; a busy
one gets it queued. A full mailbox makes the runner wait for room; a planner
that has stopped (its run has ended) needs the report no more.
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable

from regiment.actors import ActorRef
from regiment.errors import ActorStopped, MailboxFull
from regiment.hierarchy._messages import StepReport
from regiment.hierarchy.workers._step_jobs import StepJob
from regiment.telemetry import Telemetry

__all__ = ("HandsIn", "send_report", "unsent")


class HandsIn:
    """Mixed into ``StepActor``: a step's report handed in, counted in the metrics."""

    _name: str
    _telemetry: Telemetry

    async def _hand_in(self, job: StepJob, report: StepReport) -> None:
        """Hand a report in through the planner's mailbox (a step cut short), unless
        the step was reported abandoned already (its cancel grace ran out first)."""
        if job.abandoned:
            return
        await self._hand_over(job, report)

    async def _hand_over(self, job: StepJob, report: StepReport) -> None:
        """Hand a report in through the planner's mailbox, whatever the step's state."""
        self._count(job, report)
        await send_report(job.reply_to, report)

    def _count(self, job: StepJob, report: StepReport) -> None:
        if self._telemetry.metrics is not None:
            outcome: str = report.status
            if outcome == "cancelled" and job.waits_for_decision():  # as the step's span says
                outcome = "awaiting_approval"
            self._telemetry.metrics.step(self._name, outcome)


async def send_report(reply_to: ActorRef[StepReport, object], report: StepReport) -> None:
    """Queue ``report`` for its planner, waiting for room if its mailbox is full."""
    if not _sent_now(reply_to, report):
        await _send_waiting(reply_to, report)


async def _send_waiting(reply_to: ActorRef[StepReport, object], report: StepReport) -> None:
    """Send ``report`` once the mailbox has room (``_sent_now`` found it full)."""
    with contextlib.suppress(ActorStopped):  # the run has ended meanwhile
        await reply_to.send(report)


def unsent(
    reply_to: ActorRef[StepReport, object], report: StepReport, exc: MailboxFull | ActorStopped
) -> Awaitable[None] | None:
    """What is left of handing ``report`` in after ``send_here`` raised ``exc``: a wait
    for room in a full mailbox; nothing for a planner that has stopped (its run ended)."""
    return _send_waiting(reply_to, report) if isinstance(exc, MailboxFull) else None


def _sent_now(reply_to: ActorRef[StepReport, object], report: StepReport) -> bool:
    """Send ``report`` if there is room (the usual case: no checkpoint); False if
    the mailbox is full and it has yet to go."""
    try:
        reply_to.send_nowait(report)
    except MailboxFull:
        return False
    except ActorStopped:
        pass  # the run has ended; nobody waits for this report
    return True
