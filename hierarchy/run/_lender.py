"""The task of a run's caller, lent to the run's planner-side model calls while it waits.

``run()`` waits for the run's end and does nothing else meanwhile. The run's
planner makes its model calls (plan, critique, synthesis, ...) in a task of its
own, started per burst of calls (``CallRunner``); a run of one plan and one
synthesis started two such tasks, each a task start, a first turn and a task
end. A :class:`Lender` hands those calls to the waiting caller instead: when
the planner asks for a call and no call runs, the caller, woken, runs it (in
the planner's context variables, see ``in_context``), and goes back to
waiting. The planner's first call, asked for while the run starts, costs no
wake-up at all: the caller runs it as soon as it starts waiting.

A caller that stops waiting (the run ended, or the caller was cancelled) lends
no more: a call handed to it and not yet run goes back to a task of the
planner's own.

A streamed run (``stream()``) and a nested team's run have no such caller:
theirs read events. Their calls run in a task of the team's supervisor instead
(:class:`SupervisorLender`), started per burst of calls as the planner's own
would be: the planner, spawned dormant, then never needs a task of its own
(starting and ending one costs ~270k instructions). A call there runs as one
lent by ``run()``'s caller does: in a copy of the planner's context variables,
cancelled by its own scope when the run ends, failing the planner (not the
supervisor) if it raises.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, TypeAlias, final

from regiment.actors import Wakeup

if TYPE_CHECKING:
    from regiment.hierarchy.run._call_runner import CallRunner
    from regiment.hierarchy.run._channel import RunChannel

__all__ = ("CallLender", "Lender", "SupervisorLender")

StartHelper: TypeAlias = Callable[[Callable[[], Awaitable[None]], str], None]
"""Starts a task in the team supervisor's task group (``RuntimeError``: it has stopped)."""


@final
class Lender:
    """A run's caller, waiting for the run's end, running the planner's calls meanwhile."""

    __slots__ = ("_runner", "_wakeup", "waiting")

    def __init__(self, wakeup: Wakeup) -> None:
        self._wakeup = wakeup
        self._runner: CallRunner | None = None  # calls handed over, not yet taken up
        # From the run's start until the caller stops waiting: the caller will be
        # in ``wait_end`` as soon as the run has started, so calls asked for
        # meanwhile (the plan) are handed over too.
        self.waiting = True

    def serve(self, runner: CallRunner) -> bool:
        """Take ``runner``'s queued calls on; ``False`` if the caller has stopped waiting."""
        if not self.waiting or self._runner is not None:
            return False
        self._runner = runner
        self._wakeup.wake()
        return True

    def wake(self) -> None:
        """The run has ended (its channel closed)."""
        self._wakeup.wake()

    async def until_end(self, channel: RunChannel) -> None:
        """Wait until ``channel`` is done, running no calls (the caller stopped lending)."""
        while not channel.done:
            await self._wakeup.wait()

    async def wait_end(self, channel: RunChannel) -> None:
        """Run the calls handed over until ``channel`` is done."""
        try:
            while not channel.done:
                runner, self._runner = self._runner, None
                if runner is None:
                    await self._wakeup.wait()
                else:
                    await runner.run_lent()
        finally:
            self.waiting = False
            runner, self._runner = self._runner, None
            if runner is not None:  # handed over, never taken up: the planner runs it itself
                runner.take_back()


@final
class SupervisorLender:
    """A streamed or nested run's planner calls, run in a task of the team's supervisor."""

    __slots__ = ("_name", "_start")

    def __init__(self, start: StartHelper, run_id: str) -> None:
        self._start = start
        self._name = f"{run_id} model calls"  # the task's, as the planner's own was named

    def serve(self, runner: CallRunner) -> bool:
        """Start a task that runs ``runner``'s queued calls; ``False`` if the supervisor
        has stopped (the planner's own task runs them, or none does)."""
        try:
            self._start(runner.run_lent, self._name)
        except RuntimeError:
            return False
        return True


CallLender: TypeAlias = Lender | SupervisorLender
"""Who runs a run's planner calls other than a task of the planner's own."""
