""":class:`~regiment.actors._wakeup.Wakeup` on trio (imported only when trio runs)."""

from __future__ import annotations

from trio.lowlevel import Abort, RaiseCancelT, Task, current_task, reschedule, wait_task_rescheduled

from regiment.actors._wakeup import second_waiter

__all__ = ("TrioWakeup",)


class TrioWakeup:
    """The waiter parks itself; ``wake`` reschedules it. Trio never calls the abort
    callback of a task that was rescheduled, so a wake and a cancellation cannot
    both win: whichever comes first decides, and a later wake is remembered."""

    __slots__ = ("_task", "_woken")

    def __init__(self) -> None:
        self._task: Task | None = None
        self._woken = False

    def wake(self) -> None:
        task = self._task
        if task is None:
            self._woken = True
        else:
            self._task = None
            reschedule(task)

    async def wait(self) -> None:
        if self._woken:
            self._woken = False
            return
        if self._task is not None:
            raise second_waiter()
        self._task = current_task()
        await wait_task_rescheduled(self._abort)

    def _abort(self, raise_cancel: RaiseCancelT) -> Abort:
        self._task = None
        return Abort.SUCCEEDED
