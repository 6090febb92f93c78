"""That an actor has stopped, and whoever waits for it: :class:`Stopped`.

Every actor has one and almost nobody waits on it (``ref.stop()`` from another
task does), so it is a flag first: an ``anyio.Event`` per actor cost a backend
event object and its waiter list for each spawn. A waiter gets a
:class:`~regiment.actors._wakeup.Wakeup` of its own, made only when it waits.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from regiment.actors._wakeup import Wakeup

__all__ = ("Stopped",)


class Stopped:
    """Set once, when the actor has stopped; ``done`` reads it, ``wait()`` waits for it."""

    __slots__ = ("_checkpoint", "_new_wakeup", "_waiters", "done")

    def __init__(
        self, new_wakeup: Callable[[], Wakeup], checkpoint: Callable[[], Awaitable[None]]
    ) -> None:
        self.done = False
        self._new_wakeup = new_wakeup
        self._checkpoint = checkpoint
        self._waiters: list[Wakeup] = []

    def set(self) -> None:
        """Mark the actor stopped and wake every waiter (idempotent)."""
        self.done = True
        waiters, self._waiters = self._waiters, []
        for wakeup in waiters:
            wakeup.wake()

    async def wait(self) -> None:
        """Return once the actor has stopped; a checkpoint even if it already has
        (as ``anyio.Event.wait`` is), so a waiting loop cannot starve the others."""
        if self.done:
            await self._checkpoint()
            return
        wakeup = self._new_wakeup()
        self._waiters.append(wakeup)
        try:
            await wakeup.wait()
        finally:
            if not self.done:  # cancelled before the actor stopped
                self._waiters.remove(wakeup)
