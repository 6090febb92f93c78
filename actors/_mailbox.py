"""An actor's mailbox: a bounded FIFO with many senders and one receiver.

anyio's memory object streams are general (many receivers, item hand-off,
statistics) and pay for it on every blocking receive: a checkpoint, a fresh
event, a generic receiver object and a dict entry. An actor needs less: one
receiver that waits only when the queue is empty, senders that wait only when
it is full, and a way to wake the receiver without a message. This is that,
on a deque and the running backend's event class.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import Generic, TypeVar

import anyio

__all__ = ("Mailbox",)

T = TypeVar("T")


class Mailbox(Generic[T]):
    """Bounded FIFO; ``get`` is for the one owning task, ``put`` for anyone.

    After :meth:`close`, ``put`` raises :class:`anyio.ClosedResourceError` and
    ``get`` drains what is queued, then raises :class:`anyio.EndOfStream`.
    """

    __slots__ = ("_capacity", "_closed", "_items", "_new_event", "_receiver", "_senders")

    def __init__(self, capacity: int, new_event: Callable[[], anyio.Event]) -> None:
        self._capacity = capacity
        self._new_event = new_event
        self._items: deque[T] = deque()
        self._closed = False
        self._receiver: anyio.Event | None = None  # set while get() waits
        self._senders: deque[anyio.Event] = deque()  # put() calls waiting for room

    def __len__(self) -> int:
        return len(self._items)

    @property
    def closed(self) -> bool:
        return self._closed

    def put_nowait(self, item: T) -> None:
        """Queue ``item``; raises WouldBlock when full, ClosedResourceError when closed."""
        if self._closed:
            raise anyio.ClosedResourceError
        if len(self._items) >= self._capacity:
            raise anyio.WouldBlock
        self._items.append(item)
        self.wake()

    async def put(self, item: T) -> None:
        """Queue ``item``, waiting (first come, first served) while the mailbox is full."""
        while True:
            if not self._senders:  # waiting senders go first
                try:
                    self.put_nowait(item)
                except anyio.WouldBlock:
                    pass
                else:
                    return
            elif self._closed:
                raise anyio.ClosedResourceError
            room = self._new_event()
            self._senders.append(room)
            try:
                await room.wait()
            except BaseException:
                self._leave(room)
                raise
            # woken with room (or by close): our event is no longer queued
            if self._closed:
                raise anyio.ClosedResourceError
            if len(self._items) < self._capacity:
                self._items.append(item)
                self.wake()
                self._pass_room()
                return

    def get_nowait(self) -> T:
        """The oldest item; raises WouldBlock when empty, EndOfStream when closed and empty."""
        try:
            item = self._items.popleft()
        except IndexError:
            raise anyio.EndOfStream if self._closed else anyio.WouldBlock from None
        self._pass_room()
        return item

    async def get(self) -> T | None:
        """The oldest item, waiting while empty; ``None`` if :meth:`wake` woke it first.

        Raises:
            anyio.EndOfStream: closed and empty.
        """
        try:
            return self.get_nowait()
        except anyio.WouldBlock:
            pass
        ready = self._new_event()
        self._receiver = ready
        try:
            await ready.wait()
        finally:
            self._receiver = None
        try:
            return self.get_nowait()
        except anyio.WouldBlock:
            return None

    def wake(self) -> None:
        """Wake a waiting ``get`` (it returns ``None`` if nothing was queued)."""
        receiver = self._receiver
        if receiver is not None:
            self._receiver = None
            receiver.set()

    def close(self) -> None:
        """Refuse new items; wake the receiver and every waiting sender."""
        self._closed = True
        self.wake()
        while self._senders:
            self._senders.popleft().set()

    def _pass_room(self) -> None:
        """Room was made: wake the longest-waiting sender."""
        if self._senders:
            self._senders.popleft().set()

    def _leave(self, room: anyio.Event) -> None:
        """A waiting sender gave up; if it had been woken, pass the room on."""
        try:
            self._senders.remove(room)
        except ValueError:  # already woken: the room it was promised goes to the next
            if len(self._items) < self._capacity:
                self._pass_room()
