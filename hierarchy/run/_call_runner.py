"""The task a planner's model calls run in: one for calls that come back to back.

A run's planner-side calls (plan, replan, critique, compress, synthesis) come
one after another, and a call's reply is handled in the task that made it (see
``TakesTurns``), so the next call is often asked for from inside that task: a
re-prompted plan, the critic after the plan of a new round, synthesis after a
critique. The ``CallRunner`` runs such a call in the same task, after the one
in hand, instead of starting a task for it; the task ends when nothing is
queued, and the next call starts a fresh one.

It does not park a task for the run's whole life between calls (waiting for the
steps, say): a parked task keeps some thirty objects alive per run, and with a
thousand runs at once those push the cyclic garbage collector into extra
passes over live runs, which showed up as event-loop lag (measured). Nor does
it keep the planner alive: a call holds whatever it hands its result to only
while it is queued or running, so no reference cycle outlives a call.

A task that a call left with a context variable changed is not reused: the next
call gets a fresh task, started from the context the old one began with.

A run whose caller waits in ``run()`` lends that task to the calls instead
(``Lender``): no task is started for them at all. A call runs there in a copy
of the planner's context variables, so nothing it sets outlives it.
"""

from __future__ import annotations

import contextvars
from collections import deque
from collections.abc import Callable, Coroutine
from typing import Any, final

import anyio

from regiment.actors import ActorContext, in_context
from regiment.hierarchy.run._lender import CallLender
from regiment.hierarchy.run._messages import PlannerMessage
from regiment.hierarchy.run._own_task import fail_in_own_task

__all__ = ("CallRunner", "ScopedJob")

Job = Callable[[], Coroutine[Any, Any, None]]
ScopedJob = Callable[[anyio.CancelScope], Coroutine[Any, Any, None]]  # run in a scope it is given


@final
class CallRunner:
    """Runs the calls handed to it, one at a time, in order: in a task of the
    planner's, or in the run's caller's task while it waits (``Lender``)."""

    __slots__ = ("_closed", "_context", "_ctx", "_later", "_lender", "_next", "_running")

    def __init__(
        self, ctx: ActorContext[PlannerMessage, None], lender: CallLender | None = None
    ) -> None:
        self._ctx = ctx
        # The planner's context variables: made inside one of its turns (see TakesTurns).
        self._context = contextvars.copy_context()
        self._lender = lender
        self._next: Job | None = None  # the next call (one is the usual most)
        self._later: deque[Job] | None = None  # calls queued behind it, if ever
        self._running = False  # a task, or the lender, runs the calls
        self._closed = False

    def submit(self, job: Job) -> None:
        """Run ``job`` after the ones before it."""
        if self._closed:
            return  # the run has ended: nothing it asks for now is wanted
        if self._next is None:
            self._next = job
        else:
            if self._later is None:
                self._later = deque()
            self._later.append(job)
        if not self._running:
            self._running = True
            if self._lender is None or not self._lender.serve(self):
                self._start()

    def close(self) -> None:
        """The run has ended: drop what is queued (the call in hand finishes)."""
        self._closed = True
        self._next = self._later = None

    async def run_lent(self) -> None:
        """Run the queued calls in the lender's task, each as the planner's own."""
        try:
            while (job := self._take()) is not None:
                try:
                    await in_context(self._context.copy(), job())
                except Exception as exc:  # the planner fails, never its caller
                    fail_in_own_task(self._ctx, "a model call's reply", exc)
                del job  # what it hands its result to is not held between calls
        finally:
            self.take_back()  # the caller was cancelled with calls still queued, if any

    def take_back(self) -> None:
        """Calls handed to a lender that will not run them: a task of the planner's does."""
        self._running = False
        if self._closed or self._next is None:
            return
        try:
            self._context.run(self._start)  # the task starts from the planner's context
        except RuntimeError:
            self.close()  # the planner has stopped: nothing it asked for is wanted now

    def _start(self) -> None:
        self._running = True
        self._ctx.start_soon(self._run, name=f"{self._ctx.name} model calls")

    def _take(self) -> Job | None:
        job = self._next
        later = self._later
        self._next = later.popleft() if later else None
        return job

    async def _run(self) -> None:
        context = contextvars.copy_context()
        try:
            while (job := self._take()) is not None:
                await job()
                del job  # what it hands its result to is not held between calls
                if contextvars.copy_context() != context:
                    break  # the call changed a context variable: the next one gets a new task
        finally:
            self._running = False
        if self._next is not None:
            context.run(self._start)  # the new task starts from the context this one had
