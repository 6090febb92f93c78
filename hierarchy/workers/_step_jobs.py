"""A worker's assigned steps (:class:`StepJob`), their timeouts (:class:`StepTimer`)
and the runners waiting for one (:class:`IdleRunners`)."""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable, Collection, Mapping
from typing import Literal

import anyio
import msgspec

from regiment.actors import ActorRef, Wakeup
from regiment.hierarchy._messages import PAUSING, AssignStep, StepReport
from regiment.hierarchy.workers._loop import StepProgress

__all__ = ("HOLD", "IDLE_RUNNERS", "Backlog", "IdleRunners", "Lane", "StepJob", "StepTimer")

# Runners a worker keeps parked between steps; beyond that a runner with no step ends.
IDLE_RUNNERS = 128
# The longest a runner taking steps back to back holds the event loop, in seconds.
# A step that waits (a real model call) lets other tasks run anyway; steps that
# never wait (an instant model) yield once a millisecond, not after every step
# (a checkpoint per step cost a loop turn, ~6 us of a 35 us step).
HOLD = 0.001


class StepJob(msgspec.Struct, eq=False):  # eq=False: compared and hashed by identity
    """One assigned step, from its arrival to its report.

    A struct, so C code makes it (a Python ``__init__`` was a call a step, #22). Its
    worker keeps it by identity: no key tuple a step (#22 row 4); a ``CancelStep`` names
    it by its ``assign``'s run id, plan version and step id."""

    assign: AssignStep
    reply_to: ActorRef[StepReport, object]
    headers: Mapping[str, str]
    scope: anyio.CancelScope | None = None  # its runner's, while the step runs
    stop: Literal["planner", "timeout"] | None = None  # who cut it short, if anyone
    deadline: float = math.inf  # when it times out, once a runner started it
    report: StepReport | None = None  # the report of a step cut short
    progress: StepProgress | None = None  # what it spent, once a runner started it
    # Made once a running step is cut, set when it ends: its cancel grace waits on it.
    ended: anyio.Event | None = None
    abandoned: bool = False  # its grace ran out first: reported without its runner
    why: str = ""  # why the planner cut it ("plan v1 is being replaced"), if it did

    def cut(self, stop: Literal["planner", "timeout"]) -> None:
        """Stop the step: its runner's scope, if it runs (that scope is then spent)."""
        self.stop = stop
        progress = self.progress
        if progress is not None:
            progress.stopped = True
            progress.paused = self.why == PAUSING
            if progress.on_cut is not None:  # a nested run's steps: cut at once too
                progress.on_cut(progress.paused)
        if self.scope is not None:
            self.scope.cancel()

    def due(self) -> float:
        """When it times out: its deadline, later by the time its calls waited for
        decisions (never while one waits)."""
        progress = self.progress
        if progress is None:
            return self.deadline
        return math.inf if progress.deciding else self.deadline + progress.held_s

    def waits_for_decision(self) -> bool:
        """Cut by its run's pause while it waited for a decision (not called off); a step
        a nested run's pause cut while it worked was cut short like any other."""
        return self.why == PAUSING and self.progress is not None and self.progress.awaiting

    def cancel_error(self) -> str:
        """The error of a step the planner cut: that it did, and why."""
        return f"cancelled by the planner: {self.why}" if self.why else "cancelled by the planner"

    def cut_report(self, progress: StepProgress, worker: str, timeout: float | None) -> StepReport:
        """The report of a step cut short: by the planner, or by its timeout."""
        if self.stop == "planner":
            return progress.report(self.assign, worker, "cancelled", error=self.cancel_error())
        return progress.report(
            self.assign,
            worker,
            "timed_out",
            error=f"step took longer than the worker's step_timeout of {timeout}s",
        )


class Backlog:
    """A worker's steps queued with no runner bound to take them (its runners are all
    busy, maybe with steps waiting for a top-up that only those queued would give back):
    ``tell(assign, held)`` tells the step's run as one is held back, and as a runner
    takes it (``TopUps.queued``). A step queued behind one held back is held back too."""

    __slots__ = ("held", "tell")

    def __init__(self, tell: Callable[[AssignStep, bool], None]) -> None:
        self.held: set[StepJob] = set()
        self.tell = tell

    def hold(self, job: StepJob) -> None:
        self.held.add(job)
        self.tell(job.assign, True)

    def behind(self, job: StepJob) -> None:
        if self.held and job not in self.held:
            self.hold(job)

    def taken(self, job: StepJob) -> None:
        if job in self.held:
            self.held.discard(job)
            self.tell(job.assign, False)

    def cut(self, jobs: list[StepJob]) -> list[StepJob]:
        """``jobs`` left the queue, cut before a runner took them."""
        self.held.difference_update(jobs)
        return jobs


class Lane:
    """One runner: the step it runs in its current cancel scope, if any, what
    wakes it while it waits for a step (reused for all its waits), and when it
    last let other tasks run (on the loop's clock)."""

    __slots__ = ("job", "since", "wakeup")

    def __init__(self, wakeup: Wakeup, since: float) -> None:
        self.job: StepJob | None = None
        self.wakeup = wakeup
        self.since = since


class IdleRunners:
    """A worker's runners parked between steps, woken last in, first out.

    A step assigned while a runner is parked runs on it instead of on a new
    task (starting a task was the largest single cost of a step when bursts of
    steps kept ending and starting runners). The most recently parked runner is
    woken first: the others stay parked and, past ``limit``, a runner without a
    step ends instead of parking. Parked runners are the worker's tasks, so
    they end when the worker stops.
    """

    __slots__ = ("limit", "parked")

    def __init__(self, limit: int = IDLE_RUNNERS) -> None:
        self.limit = limit
        # The parked runners' wake-ups; read it to know whether one waits (a plain
        # attribute: every step asks). Insertion-ordered: popitem() takes the newest,
        # and a cancelled wait leaves in O(1).
        self.parked: dict[Wakeup, None] = {}

    def wake_one(self) -> None:
        """Wake the most recently parked runner (there must be one)."""
        self.parked.popitem()[0].wake()

    async def park(self, wakeup: Wakeup) -> bool:
        """Wait for a step with ``wakeup``; False at once if ``limit`` runners wait already."""
        parked = self.parked
        if len(parked) >= self.limit:
            return False
        parked[wakeup] = None
        try:
            await wakeup.wait()
        finally:
            # not woken by a step (cancelled, or a stale wake): it waits no longer
            parked.pop(wakeup, None)
        return True


class StepTimer:
    """Times a worker's running steps out, with one task rather than a timer per step.

    Every step of a worker gets the same ``step_timeout``, so a step started later
    has a later deadline: the task sleeps until the earliest deadline it knows of,
    cuts the steps that are due, and sleeps again.
    """

    __slots__ = (
        "_cut",
        "_jobs",
        "_nudger",
        "_running",
        "_seconds",
        "_sleep",
        "_start_soon",
        "_stopping",
    )

    def __init__(
        self,
        seconds: float,
        jobs: Collection[StepJob],
        start_soon: Callable[[float], None],
        cut: Callable[[StepJob], None],
        stopping: Callable[[], Awaitable[None]],
    ) -> None:
        self._seconds = seconds
        self._jobs = jobs  # the worker's queued and running steps
        self._start_soon = start_soon  # starts watch(first deadline) in the worker's tasks
        self._cut = cut  # times a running step out (and starts its cancel grace)
        self._stopping = stopping  # the worker stops: what its running steps do then
        self._running = False
        self._sleep: anyio.CancelScope | None = None  # the watch's sleep, while it sleeps
        self._nudger = self._nudge  # (bound once: every step's progress gets it)

    def arm(self, job: StepJob, now: float) -> None:
        """Give a step its deadline as a runner starts it (``now``: the loop's clock)."""
        job.deadline = deadline = now + self._seconds
        if job.progress is not None:
            job.progress.nudge = self._nudger
        if not self._running:
            self._running = True
            self._start_soon(deadline)

    async def watch(self, wake: float, new_scope: type[anyio.CancelScope]) -> None:
        """Cut every running step past its deadline, until cancelled (the worker stops).

        ``new_scope``: the backend's scope class, found once (``anyio.CancelScope()``
        looks the backend up at every call)."""
        try:
            await self._watch(wake, new_scope)
        except anyio.get_cancelled_exc_class():
            with anyio.CancelScope(shield=True):
                await self._stopping()
            raise

    def _nudge(self) -> None:
        """A step's wait for a decision ended: look at the deadlines again now (its own
        is later by the wait, and may come before the watch would wake)."""
        if self._sleep is not None:
            self._sleep.deadline = anyio.current_time()

    async def _watch(self, wake: float, new_scope: type[anyio.CancelScope]) -> None:
        while True:
            with new_scope(deadline=wake) as self._sleep:
                await anyio.sleep_forever()
            self._sleep = None
            now = anyio.current_time()
            wake = now + self._seconds
            for job in list(self._jobs):  # a cut may start a task: no dict changes
                due = job.due()
                if due <= now:
                    if job.stop is None and job.scope is not None:
                        self._cut(job)
                elif due < wake:
                    wake = due
