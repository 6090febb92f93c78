"""An actor's mailbox: a bounded FIFO with many senders and one receiver.

anyio's memory object streams are general (many receivers, item hand-off,
statistics) and pay for it on every blocking receive: a checkpoint, a fresh
event, a generic receiver object and a dict entry. An actor needs less: one
receiver that waits only when the queue is empty, senders that wait only when
it is full, and a way to wake the receiver without a message. This is that,
on a deque and a :class:`~regiment.actors._wakeup.Wakeup` the receiver reuses
for every wait (no event object per wait).
"""

from __future__ import annotations

import contextlib
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Generic, TypeVar

import anyio
import anyio.lowlevel

from regiment.actors._wakeup import Wakeup

__all__ = ("Mailbox",)

T = TypeVar("T")


class _Sender:
    """A ``put`` waiting for room; ``granted`` once a slot is held for it."""

    __slots__ = ("granted", "ready")

    def __init__(self, ready: Wakeup) -> None:
        self.ready = ready
        self.granted = False


class Mailbox(Generic[T]):
    """Bounded FIFO; ``get`` is for the one owning task, ``put`` for anyone.

    Senders that wait for room get it in the order they came: a slot freed by
    ``get`` is held for the longest-waiting sender, and ``put_nowait`` cannot
    take a held slot. After :meth:`close`, ``put`` raises
    :class:`anyio.ClosedResourceError` and ``get`` drains what is queued, then
    raises :class:`anyio.EndOfStream`.
    """

    __slots__ = (
        "_capacity",
        "_checkpoint",
        "_closed",
        "_held",
        "_new_wakeup",
        "_senders",
        "_wakeup",
        "items",
        "waiting",
    )

    def __init__(
        self,
        capacity: int,
        new_wakeup: Callable[[], Wakeup],
        checkpoint: Callable[[], Awaitable[None]] = anyio.lowlevel.checkpoint,
    ) -> None:
        self._capacity = capacity
        self._checkpoint = checkpoint  # the backend's, found once (system.checkpoint)
        self._new_wakeup = new_wakeup
        # Attributes, not properties: the actor loop and senders read them per message.
        self.items: deque[T] = deque()  # queued, oldest first (only the mailbox changes it)
        self._closed = False
        # The receiver's, for all its waits; a wake() while it does not wait is
        # remembered by the Wakeup, so its next wait returns at once.
        self._wakeup = new_wakeup()
        # Whether the receiver waits for an item (so the mailbox is empty and open).
        self.waiting = False
        self._senders: deque[_Sender] = deque()  # put() calls waiting for room, oldest first
        self._held = 0  # slots granted to woken senders that have not filled them yet

    def __len__(self) -> int:
        return len(self.items)

    @property
    def closed(self) -> bool:
        return self._closed

    def put_nowait(self, item: T) -> None:
        """Queue ``item``; raises WouldBlock when full, ClosedResourceError when closed."""
        if self._closed:
            raise anyio.ClosedResourceError
        if self._senders or len(self.items) + self._held >= self._capacity:
            raise anyio.WouldBlock  # full, or the free room belongs to waiting senders
        self.items.append(item)
        self._notify()

    async def put(self, item: T) -> None:
        """Queue ``item``, waiting (first come, first served) while the mailbox is full."""
        try:
            self.put_nowait(item)
        except anyio.WouldBlock:
            pass
        else:
            return
        sender = _Sender(self._new_wakeup())
        self._senders.append(sender)
        try:
            await sender.ready.wait()
        except BaseException:
            self._leave(sender)
            raise
        if sender.granted:
            self._held -= 1
        if self._closed:  # woken by close(), or closed before it could fill its slot
            raise anyio.ClosedResourceError
        self.items.append(item)
        self._notify()

    def __bool__(self) -> bool:
        return bool(self.items)

    def get_nowait(self) -> T:
        """The oldest item; raises WouldBlock when empty, EndOfStream when closed and empty."""
        if not self.items:
            raise anyio.EndOfStream if self._closed else anyio.WouldBlock
        item = self.items.popleft()
        if self._senders:
            self._pass_room()
        return item

    async def get(self, *, linger: bool = False) -> T | None:
        """The oldest item, waiting while empty; ``None`` if :meth:`wake` woke it first.

        It does not checkpoint when an item is queued. No exception is raised
        and caught on the way, and no helper is called (this is every actor's
        hot path).

        Args:
            linger: when empty, pass once through the event loop before waiting:
                an actor that has just answered an ask often gets the asker's next
                message within that pass, and then needs no wait and no extra turn.

        Raises:
            anyio.EndOfStream: closed and empty.
        """
        if not self.items:
            if self._closed:
                raise anyio.EndOfStream
            if linger:
                await self._checkpoint()
                if self.items:
                    return self.get_nowait()
                if self._closed:
                    raise anyio.EndOfStream
            # Returns at once if wake() came while it was not waiting (during the linger, say).
            self.waiting = True
            try:
                await self._wakeup.wait()
            finally:
                self.waiting = False
            if not self.items:
                if self._closed:
                    raise anyio.EndOfStream
                return None
        item = self.items.popleft()
        if self._senders:
            self._pass_room()
        return item

    def wake(self) -> None:
        """Wake a waiting ``get`` (it returns ``None`` if nothing was queued); a ``get``
        that is not waiting yet returns ``None`` instead of waiting, once."""
        self.waiting = False
        self._wakeup.wake()

    def _notify(self) -> None:
        if self.waiting:
            self.waiting = False
            self._wakeup.wake()

    def close(self) -> None:
        """Refuse new items; wake the receiver and every waiting sender."""
        self._closed = True
        self._notify()
        while self._senders:
            self._senders.popleft().ready.wake()

    def _pass_room(self) -> None:
        """Room was made: hold it for the longest-waiting sender and wake it."""
        if self._senders and len(self.items) + self._held < self._capacity:
            sender = self._senders.popleft()
            sender.granted = True
            self._held += 1
            sender.ready.wake()

    def _leave(self, sender: _Sender) -> None:
        """A waiting sender gave up; a slot held for it goes to the next one."""
        if sender.granted:
            self._held -= 1
            self._pass_room()
        else:
            with contextlib.suppress(ValueError):  # already woken by close()
                self._senders.remove(sender)
