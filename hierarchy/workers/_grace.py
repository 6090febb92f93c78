"""A cancelled step that does not stop: reported abandoned once its grace is over.

A step cut short (by the planner, or by its timeout) normally ends at once: its
tool calls and model call are cancelled, and its runner hands its report in. A
tool that ignores the cancel (it catches ``CancelledError`` and goes on, or
shields itself) keeps its step's runner busy. So that the run does not wait for
it forever, the worker waits ``cancel_grace`` seconds for the step to end, then
hands its report in without it: the step is ``cancelled`` (or ``timed_out``),
each tool call still running is a failed outcome with ``error_type`` ``"abandoned"``,
and a warning names the tools. The runner's task cannot be left behind (it is
one of the worker's tasks): it goes on until the tool returns, and its own
report is then dropped; the team's stop waits for it, and says so on ``regiment.team``.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Collection
from typing import Literal

import anyio
import msgspec

from regiment.actors import ActorContext
from regiment.hierarchy._messages import StepReport, ToolOutcome, WorkerMessage
from regiment.hierarchy.workers._hand_in import HandsIn
from regiment.hierarchy.workers._step_jobs import StepJob
from regiment.hierarchy.workers._worker import CANCEL_GRACE

__all__ = ("ABANDONED", "CANCEL_GRACE", "GivesUp", "abandon_after")

_log = logging.getLogger("regiment.worker")
_team_log = logging.getLogger("regiment.team")  # what holds the team's stop

ABANDONED = "abandoned"
"""``ToolOutcome.error_type`` of a call still running when its step was given up."""

_LET_IT_THROUGH = (
    "A tool must let cancellation through: re-raise CancelledError (never catch it with "
    "a bare except or BaseException), and shield only a short cleanup, bounded "
    "(anyio.move_on_after(seconds, shield=True)); work that cannot be stopped belongs in "
    "a sync tool, whose thread is left behind on a cancel"
)


class GivesUp(HandsIn):
    """Mixed into ``StepActor``: cutting a step short, giving up on one that goes on,
    and handing its report in (``HandsIn``)."""

    ctx: ActorContext[WorkerMessage, None]
    _name: str
    _grace: float | None
    _step_timeout: float | None

    _jobs: Collection[StepJob]
    # What becomes of a step given up, as its warning says (a Ray worker's differs).
    given_up_then = "it still runs, and the team's stop will wait for it"
    # What the team's stop does about a step's tool that still runs (a Ray worker's differs).
    held_then = (
        "the stop waits for it to return, as no task can be left behind (the event "
        "loop's own shutdown would wait for it too)"
    )

    async def _stopping(self) -> None:
        """The worker stops (its tasks are cancelled): its running steps call their
        model no more (a tool that finishes anyway ends its step, as a cut one does);
        wait up to the grace for them to end, and name those that do not (the stop
        waits for them)."""
        running = [job for job in self._jobs if job.scope is not None]
        for job in running:
            if job.progress is not None:  # a tool that finishes anyway: no model call after it
                job.progress.stopped = True
        if not running or self._grace is None:
            return
        for job in running:
            if job.ended is None:
                job.ended = anyio.Event()
        with anyio.move_on_after(self._grace):
            for job in running:
                await job.ended.wait()  # type: ignore[union-attr]  # made just above
        for job in running:
            if job.ended is not None and not job.ended.is_set() and not job.abandoned:
                _log_held(job, _in_flight(job), self._name, self.held_then)

    def _time_out(self, job: StepJob) -> None:
        self._cut(job, "timeout")

    def _cut(self, job: StepJob, stop: Literal["planner", "timeout"]) -> None:
        """Stop ``job``; a running one has ``cancel_grace`` seconds to end, or is given up."""
        job.cut(stop)
        if job.scope is not None and self._grace is not None and job.ended is None:
            job.ended = anyio.Event()
            grace = (job, self._grace, self._name, self._step_timeout, self._hand_over)
            then = (self.given_up_then, self.held_then)
            self.ctx.start_soon(abandon_after, *grace, *then, name=f"{self._name} cancel grace")


async def abandon_after(
    job: StepJob,
    grace: float,
    worker: str,
    step_timeout: float | None,
    hand_in: Callable[[StepJob, StepReport], Awaitable[None]],
    then: str = GivesUp.given_up_then,
    held: str = GivesUp.held_then,
) -> None:
    """Wait up to ``grace`` seconds for the cut step ``job`` to end; if it has not,
    hand its report in for it (``hand_in``) and mark it abandoned, warning what
    becomes of it (``then``; ``held``: what the team's stop does about it)."""
    ended = job.ended
    assert ended is not None  # made when the step was cut
    with anyio.move_on_after(grace):
        await ended.wait()
        return
    if ended.is_set():  # it ended as the grace ran out: its runner hands it in
        return
    job.abandoned = True
    report = _abandoned_report(job, grace, worker, step_timeout)
    _warn(job, report.status, (grace, then), worker)
    await hand_in(job, report)
    try:
        await ended.wait()  # until the tool returns at last
    except anyio.get_cancelled_exc_class():
        # The worker is stopping (the team's stop), and waits for the step's runner.
        _log_held(job, _in_flight(job), worker, held)
        with anyio.CancelScope(shield=True):
            await ended.wait()  # ends with the runner: it does not hold the stop longer
        raise


def _abandoned_report(
    job: StepJob, grace: float, worker: str, step_timeout: float | None
) -> StepReport:
    """The report of a cut step that went on: what it spent so far, its calls in
    flight as failed outcomes."""
    progress = job.progress
    assert progress is not None  # a runner started it
    report = job.cut_report(progress, worker, step_timeout)
    calls = progress.calling
    why = f"did not stop within {grace}s of the step's cancel; it may still be running"
    running = tuple(
        ToolOutcome(
            tool=call.name,
            call_id=call.id,
            arguments=dict(call.arguments),
            content=f"abandoned: tool '{call.name}' {why}",
            is_error=True,
            error_type=ABANDONED,
        )
        for call in calls
    )
    what = ", ".join(f"tool '{c.name}'" for c in calls) or "its work"
    error = f"{report.error}; abandoned: {what} {why}"
    return msgspec.structs.replace(
        report, error=error, tool_outcomes=report.tool_outcomes + running
    )


def _warn(job: StepJob, status: str, given_up: tuple[float, str], worker: str) -> None:
    assign, tools = job.assign, _in_flight(job)
    grace, then = given_up
    _log.warning(
        "%s %s: %s did not stop within %ss of the step's cancel, so the step was reported "
        "%s without it; %s. %s",
        worker,
        assign.step.id,
        _what(tools),
        grace,
        status,
        then,
        _LET_IT_THROUGH,
        extra={
            "run_id": assign.run_id,
            "step_id": assign.step.id,
            "worker": worker,
            "tools": tools,
        },
    )


def _in_flight(job: StepJob) -> list[str]:
    """The tools a running step is calling now."""
    progress = job.progress
    return sorted({c.name for c in progress.calling}) if progress is not None else []


def _what(tools: list[str]) -> str:
    return ", ".join(f"tool '{t}'" for t in tools) or "the step"


def _log_held(job: StepJob, tools: list[str], worker: str, held: str) -> None:
    assign = job.assign
    _team_log.warning(
        "the team is stopping, but %s of step %s (worker '%s', run %s) ignores "
        "cancellation and still runs; %s. %s",
        _what(tools),
        assign.step.id,
        worker,
        assign.run_id,
        held,
        _LET_IT_THROUGH,
        extra={"run_id": assign.run_id, "step_id": assign.step.id, "worker": worker},
    )
