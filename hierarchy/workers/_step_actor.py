"""The step bookkeeping every assignee of a plan step shares: :class:`StepActor`.

A worker (``_worker.WorkerActor``) and a sub-team (``_team_worker.TeamWorkerActor``)
differ only in how a step is done (:meth:`StepActor.work`); how steps are
queued, run on reused runner tasks, cancelled, timed out and reported is here.

Steps run on runner tasks the actor owns, at most ``max_concurrent`` of them; a step
assigned while all are busy waits its turn in order (held back: ``Backlog``). A runner
that finishes a step takes the next one, or parks until one comes (``IdleRunners``: up
to ``IDLE_RUNNERS``, newest woken first): a task per step was the largest cost of a
step. A runner whose step left a context variable changed retires. A step cancelled
while it waits for a runner never starts and reports at once; ``step_timeout`` counts
from the moment a runner starts the step.
"""

from __future__ import annotations

import contextvars
import math
from abc import abstractmethod
from collections import deque
from collections.abc import Iterable, Mapping
from typing import Never, assert_never

import anyio
from opentelemetry.util.types import AttributeValue

from regiment.actors import Actor, ActorRef
from regiment.errors import ActorStopped, ConfigError, MailboxFull
from regiment.hierarchy._log_context import LOG_MARK
from regiment.hierarchy._messages import (
    AssignStep,
    CancelStep,
    StepReport,
    WorkerMessage,
)
from regiment.hierarchy.workers._failed import failed_report
from regiment.hierarchy.workers._grace import CANCEL_GRACE, GivesUp
from regiment.hierarchy.workers._hand_in import send_report, unsent
from regiment.hierarchy.workers._loop import StepProgress
from regiment.hierarchy.workers._step_jobs import (
    HOLD,
    Backlog,
    IdleRunners,
    Lane,
    StepJob,
    StepTimer,
)
from regiment.telemetry import Telemetry, record_cancellation
from regiment.telemetry import semconv as sc

__all__ = ("StepActor",)

Sender = ActorRef[Never, object] | None  # who assigned a step (its report goes there)


class StepActor(GivesUp, Actor[WorkerMessage, None]):
    """The step bookkeeping every assignee shares (a worker, a sub-team).

    A ``CancelStep`` stops exactly the steps it names (by run, plan version and step). Whatever happens to a step, exactly one
    ``StepReport`` goes back to the sender of the assignment (a sender that has
    stopped meanwhile is not an error). Subclasses implement :meth:`work`; its runners
    are as the module says, sharing one cancel scope until a step in it is cut (a scope
    a step was anyio's largest cost of a step); one task keeps the timeouts.
    """

    def __init__(
        self,
        name: str,
        telemetry: Telemetry,
        *,
        max_concurrent: int | None = None,
        step_timeout: float | None = None,
        span_attributes: Mapping[str, AttributeValue] | None = None,
        cancel_grace: float | None = CANCEL_GRACE,
    ) -> None:
        self._name = name
        self._span_attributes = span_attributes  # e.g. the agent's provider and description
        self._telemetry = telemetry
        self._step_timeout = step_timeout
        self._grace = cancel_grace  # how long a cut step may go on before it is given up
        # Queued and running steps, in the order they came (a dict: a set's is its hashes').
        self._jobs: dict[StepJob, None] = {}
        self._max_runners = max_concurrent
        self._runners = 0
        self._queued: deque[StepJob] = deque()
        self._idle = IdleRunners()  # runners waiting for a step
        self._taker = False  # a runner handing a report in takes the next step queued
        self._backlog = Backlog(self.held_back)  # queued with no runner bound to take them
        # With no step_timeout it times nothing out; its one task still sees the worker stop
        # (_stopping: a tool that ignores the cancel is named while the stop waits for it).
        seconds = math.inf if step_timeout is None else step_timeout
        self._timer = StepTimer(seconds, self._jobs, self._watch, self._time_out, self._stopping)

    @abstractmethod
    async def work(self, assign: AssignStep, progress: StepProgress) -> StepReport:
        """Do one step; keep what was spent in ``progress`` as it is spent.

        It runs inside a cancel scope and the step's ``invoke_agent`` span. If it
        is cancelled or raises, the report is built from ``progress``.
        """

    async def receive(self, message: WorkerMessage) -> None:
        match message:
            case AssignStep():
                envelope = self.ctx.envelope
                self._start(message, envelope.sender, envelope.headers)
            case CancelStep():
                for job in _cancel(self, message):  # cut before a runner took it
                    await self._hand_in(job, await self._run_step(job, math.inf))  # never armed
            case _:
                assert_never(message)

    async def on_stop(self) -> None:
        """Steps still waiting for a runner are reported cancelled, like running ones."""
        await _stop_queued(self._queued, self._jobs, self._name)

    def receive_message_now(
        self, message: WorkerMessage, sender: Sender, headers: Mapping[str, str]
    ) -> bool:
        """A step sent while a runner waits goes straight to that runner (one hop fewer a
        step; no envelope made for it, #22); a ``CancelStep`` cuts its steps here, as the
        planner decides (``cut_now``)."""
        if type(message) is AssignStep:  # a runner takes it without a wake-up:
            if (self._taker or self._idle.parked) and sender is not None:
                self._start(message, sender, headers)
                return True
        elif type(message) is CancelStep:
            cut_now(self._jobs, message)
        return False

    def _start(self, assign: AssignStep, sender: Sender, headers: Mapping[str, str]) -> None:
        if sender is None:
            raise ConfigError(f"worker '{self._name}' got a step with no sender to report to")
        # Whoever assigns a step accepts its report; the envelope cannot say so in types.
        job = StepJob(assign, sender, headers)  # type: ignore[arg-type]
        self._jobs[job] = None
        self._queued.append(job)
        if self._taker:  # a runner handing a report in takes it next (see _steps)
            self._taker = False
        elif self._idle.parked:
            self._idle.wake_one()
        elif self._max_runners is None or self._runners < self._max_runners:
            self._add_runner()
        else:
            self._backlog.hold(job)  # no runner is bound to take it
        if self._backlog.held:  # (a plain step pays no call for it: #22)
            self._backlog.behind(job)  # nor to take it before those held back ahead of it

    def held_back(self, assign: AssignStep, held: bool) -> None:
        """A step waits for a runner only a running step's end frees, or no longer."""

    def _add_runner(self) -> None:
        self._runners += 1
        self.ctx.start_soon(self._runner, name=f"{self._name} steps")

    async def _runner(self) -> None:
        context = contextvars.copy_context()
        wakeup = self.ctx.system.new_wakeup()  # the runner's, for all its waits for a step
        more = True
        while more:
            # The backend's class, found once (anyio.CancelScope() looks it up each call).
            scope = self.ctx.system.new_cancel_scope()
            lane = Lane(wakeup, self.ctx.system.loop_time())
            try:
                with scope:
                    more = await self._steps(scope, lane, context)
            except anyio.get_cancelled_exc_class():
                # The worker itself is stopping: a step cut just before still reports.
                job = lane.job
                if job is not None and job.report is not None and not job.abandoned:
                    with anyio.CancelScope(shield=True), anyio.move_on_after(1.0):
                        await send_report(job.reply_to, job.report)
                raise
            job = lane.job
            if job is not None and job.report is not None:  # cut short: the scope caught it
                await self._hand_in(job, job.report)
                more = contextvars.copy_context() == context
        self._runners -= 1
        if self._queued:  # it retired with steps still waiting (one maybe left for it)
            if self._idle.parked:
                self._idle.wake_one()
            else:  # a new runner, started from the context this one began with
                context.run(self._add_runner)

    async def _steps(
        self, scope: anyio.CancelScope, lane: Lane, context: contextvars.Context
    ) -> bool:
        """Run steps in ``scope`` until a step spends it (True) or the runner ends (False)."""
        while True:
            if not self._queued:
                if not await self._idle.park(lane.wakeup):
                    return False  # enough runners wait already; a burst's extra ones end
                lane.since = self.ctx.system.loop_time()
                continue
            if (now := self.ctx.system.loop_time()) - lane.since >= HOLD:  # once a step, #22
                await self.ctx.system.checkpoint()
                lane.since = self.ctx.system.loop_time()
                continue  # (the queue may have changed meanwhile)
            lane.job = job = self._queued.popleft()
            if self._backlog.held:
                self._backlog.taken(job)
            job.scope = scope
            report = await (self._run_step if self._telemetry.traced else self._outcome)(job, now)
            lane.job = None
            if job.stop is not None and scope.cancel_called:  # only a cut cancels it (#22)
                # Cancelled as the step ended: its report stands, the scope is spent.
                with anyio.CancelScope(shield=True):
                    await self._hand_in(job, report)
                return contextvars.copy_context() == context
            # A step the report readies (often right here) is left for this runner.
            self._taker = True
            try:
                if self._telemetry.metrics is not None:  # else nothing to count: no call
                    self._count(job, report)
                try:  # handed in, no call between (#22): an idle planner takes it here
                    handing = job.reply_to.send_here(report)
                except (MailboxFull, ActorStopped) as exc:  # wait for room, or not at all
                    handing = unsent(job.reply_to, report, exc)
                if handing is not None:
                    await handing
            finally:
                self._taker = False
            if contextvars.copy_context() != context:
                return False  # the step changed a context variable: the next one gets a fresh task

    async def _run_step(self, job: StepJob, now: float) -> StepReport:
        assign = job.assign
        if not self._telemetry.traced:  # no span to open (_steps awaits _outcome itself)
            return await self._outcome(job, now)
        cut: BaseException | None = None
        # The step's span is parented by the trace context its envelope carried,
        # so a worker serving many runs links each step to its own run. The log mark is
        # _outcome's to set, as on an untraced step (setting it here too was 3 calls, #22).
        with self._telemetry.agent_span(
            self._name,
            parent_headers=job.headers,
            run_id=assign.run_id,
            step_id=assign.step.id,
            plan_version=assign.plan_version,
            attempt=assign.attempt,
            attributes=self._span_attributes,
        ) as span:
            try:
                report: StepReport | None = await self._outcome(job, now)
            except anyio.get_cancelled_exc_class() as exc:
                # Cut short (by the planner; with no report: the worker is stopping). The
                # span ends with the step's outcome, and the cancellation goes on to the
                # runner's scope, which catches it (or on up, when the worker stops).
                cut, report = exc, job.report
            recorder = self._telemetry.recorder
            if report is None or report.status == "cancelled":  # as if it left the span
                if job.waits_for_decision():  # as its call's span says
                    recorder.step_outcome(span, "awaiting_approval")
                else:
                    recorder.step_outcome(span, "cancelled")
                    record_cancellation(span, cut, _why_cut(job))
            else:
                recorder.step_outcome(
                    span,
                    report.status,
                    error_type=_error_type(report) if report.status != "done" else None,
                    description=report.error or "",
                    raised=report.error_type is not None,  # an exception's: what ended it
                )
        if cut is not None:
            raise cut
        assert report is not None  # not cut short, so _outcome returned it
        return report

    async def _outcome(self, job: StepJob, now: float) -> StepReport:  # now: as it was taken
        assign = job.assign
        job.progress = progress = StepProgress()
        # log_context's mark, set and reset with no Python call (issue #22)
        mark = LOG_MARK.set((assign.run_id, assign.step.id, self._name))
        try:
            if job.stop is not None:
                # Cancelled while it waited for a runner: it must not start at all
                # (work() may reach a model or a tool before its first checkpoint).
                return progress.report(assign, self._name, "cancelled", error=job.cancel_error())
            self._timer.arm(job, now)
            return await self.work(assign, progress)
        except Exception as exc:  # a crash of this step, not of the worker: report it
            return failed_report(progress, assign, self._name, exc)
        except anyio.get_cancelled_exc_class():
            if job.stop is not None:  # our scope was cancelled: by the planner, or timed out
                job.report = job.cut_report(progress, self._name, self._step_timeout)
                raise
            # The worker itself is stopping: still tell the planner, then stop.
            with anyio.CancelScope(shield=True), anyio.move_on_after(1.0):
                await send_report(
                    job.reply_to,
                    progress.report(assign, self._name, "cancelled", error="worker stopped"),
                )
            raise
        finally:
            self._jobs.pop(job, None)
            job.scope = None
            if job.ended is not None:  # it was cut: its cancel grace ends here
                job.ended.set()
            LOG_MARK.reset(mark)

    def _watch(self, first_deadline: float) -> None:
        scope = self.ctx.system.new_cancel_scope  # the backend's class, found once
        self.ctx.start_soon(self._timer.watch, first_deadline, scope, name=f"{self._name} timeouts")


def _cancel(actor: StepActor, cancel: CancelStep) -> list[StepJob]:
    """Cut the steps ``cancel`` names; those waiting for a runner leave the queue."""
    for job in _named(actor._jobs, cancel):
        job.why = cancel.reason
        actor._cut(job, "planner")
    return actor._backlog.cut(_take_cut(actor._queued))


def _why_cut(job: StepJob) -> str:
    """Who called a cancelled step off, for its span: the planner's reason (``plan v1
    is being replaced``, ``the run is ending``, ...), or its worker stopping."""
    if job.stop == "planner":
        return job.why or "cancelled by the planner"
    return "the step ran out of time" if job.stop == "timeout" else "the worker is stopping"


async def _stop_queued(queued: deque[StepJob], jobs: dict[StepJob, None], worker: str) -> None:
    """Report the steps still waiting for a runner cancelled: their worker stops."""
    with anyio.move_on_after(1.0):
        while queued:
            job = queued.popleft()
            jobs.pop(job, None)
            report = StepProgress().report(job.assign, worker, "cancelled", error="worker stopped")
            await send_report(job.reply_to, report)


def cut_now(jobs: Iterable[StepJob], cancel: CancelStep) -> None:
    """Stop the running steps ``cancel`` names at once, in the planner's task as it
    decides (a replan, the run's end): a step whose model answered meanwhile must not
    start a tool of a plan that is over. ``receive`` then does the rest (each cut
    step's grace, the steps still queued)."""
    for job in _named(jobs, cancel):
        if job.stop is None:
            job.why = cancel.reason
            job.cut("planner")


def _take_cut(queued: deque[StepJob]) -> list[StepJob]:
    """Take the steps that were cut out of ``queued`` (in place), in their order."""
    cut = [job for job in queued if job.stop is not None]
    if cut:
        kept = [job for job in queued if job.stop is None]
        queued.clear()
        queued.extend(kept)
    return cut


def _named(jobs: Iterable[StepJob], cancel: CancelStep) -> list[StepJob]:
    """The steps a ``CancelStep`` names (queued ones never start)."""
    named: list[StepJob] = []
    for job in jobs:
        assign = job.assign
        if assign.run_id != cancel.run_id:
            continue
        if cancel.plan_version is not None and assign.plan_version != cancel.plan_version:
            continue
        if cancel.step_id is None or cancel.step_id == assign.step.id:
            named.append(job)
    return named


# ``error.type`` of a step that ended without raising: a code, never the status word.
_STATUS_ERRORS: dict[str, str] = {
    "timed_out": sc.ERROR_TIMEOUT,
    "iteration_limit": sc.ERROR_ITERATION_LIMIT,
    "budget_exhausted": sc.ERROR_BUDGET_EXHAUSTED,
}


def _error_type(report: StepReport) -> str:
    """A failed step's ``error.type``: the exception's type, else the code for its status."""
    return report.error_type or _STATUS_ERRORS.get(report.status, sc.ERROR_OTHER)
