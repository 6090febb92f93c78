"""A reusable wake-up for one waiting task, its backend resolved once.

An ``anyio.Event`` per wait costs, on asyncio, the backend lookup (unless the
class was cached), an ``asyncio.Event``, its waiter list and a future; the
actor runtime waits this way at least twice per plan step (a mailbox's
receiver, a worker's idle runner). A :class:`Wakeup` is made once per waiting
place and reused: on asyncio a wait is one loop future, on trio one park of the
current task (``trio.lowlevel.wait_task_rescheduled``).

The contract, the same on both backends:

* ``wake()`` is synchronous and never blocks. It resumes the waiting task, or,
  when no task is parked in ``wait()`` (none waits, or the waiter was already
  woken or cancelled and has not run yet), it is remembered: the next
  ``wait()`` returns at once and clears it. Several remembered wakes are one.
  So a wake can end a later wait early, never be lost; callers re-check what
  they wait for.
* ``wait()`` is for one task at a time. It returns when woken. A wait that
  blocks is cancelled like any other (the waiter raises the backend's
  cancellation exception from an anyio cancel scope); a wait that finds a
  remembered wake returns without a checkpoint.
* A wake is never lost: one that lands on a wait being cancelled is remembered
  for the next wait (the cancelled wait still raises).
"""

from __future__ import annotations

import functools
import types
from collections.abc import Awaitable, Callable, Generator
from typing import TYPE_CHECKING, Protocol

import anyio
import anyio.lowlevel

from regiment.errors import ConfigError

if TYPE_CHECKING:
    import asyncio

__all__ = (
    "Wakeup",
    "loop_checkpoint",
    "loop_checkpoint_if_cancelled",
    "loop_clock",
    "wakeup_factory",
)


class Wakeup(Protocol):
    """Wakes one waiting task; see the module docstring for the rules."""

    def wake(self) -> None: ...

    async def wait(self) -> None: ...


class AsyncioWakeup:
    """:class:`Wakeup` on asyncio: the waiter awaits a future of the loop."""

    __slots__ = ("_future", "_loop", "_woken")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._future: asyncio.Future[None] | None = None
        self._woken = False

    def wake(self) -> None:
        future = self._future
        if future is not None and not future.done():
            future.set_result(None)
        else:  # nobody waits, or the waiter was woken or cancelled already
            self._woken = True

    async def wait(self) -> None:
        if self._woken:
            self._woken = False
            return
        if self._future is not None:
            raise second_waiter()
        self._future = future = self._loop.create_future()
        try:
            await future
        except BaseException:
            # Woken, then cancelled before it ran (a plain task.cancel() can do that):
            # the wake belongs to the next wait.
            if future.done() and not future.cancelled():
                self._woken = True
            raise
        finally:
            self._future = None


def second_waiter() -> ConfigError:
    return ConfigError(
        "two tasks wait on one Wakeup; it wakes a single waiter (give each task its own)"
    )


def _on_asyncio() -> bool:
    return anyio.get_cancelled_exc_class().__module__.startswith("asyncio")


def wakeup_factory() -> Callable[[], Wakeup]:
    """What makes wake-ups for the running backend; call it inside the event loop."""
    if _on_asyncio():
        import asyncio

        return functools.partial(AsyncioWakeup, asyncio.get_running_loop())
    from regiment.actors._wakeup_trio import TrioWakeup

    return TrioWakeup


def loop_checkpoint() -> Callable[[], Awaitable[None]]:
    """The running backend's ``anyio.lowlevel.checkpoint``, found once (that function
    looks the backend up on every call): one pass through the event loop."""
    if _on_asyncio():
        return _pass_turn
    from trio.lowlevel import checkpoint

    return checkpoint


@types.coroutine
def _pass_turn() -> Generator[None, None, None]:
    """``asyncio.sleep(0)`` without its coroutine: the bare yield its ``__sleep0``
    makes, which asyncio's task takes as "run me again in the loop's next turn" (a
    cancel is thrown in here, as there). One generator, not a coroutine and a
    generator: a worker's runner passes a turn every millisecond it holds the loop."""
    yield


def loop_checkpoint_if_cancelled() -> Callable[[], Awaitable[None]]:
    """The running backend's ``anyio.lowlevel.checkpoint_if_cancelled``, found once:
    anyio's looks the backend up on every call (about six Python calls before the
    check itself, on every event a stream reader takes). A yield to the loop only
    if the caller's scope is cancelled."""
    if not _on_asyncio():
        from trio.lowlevel import checkpoint_if_cancelled

        return checkpoint_if_cancelled
    try:  # anyio's own check (it knows its cancel scopes), without the lookup
        from anyio._core._eventloop import get_async_backend
    except ImportError:  # an anyio that moved it: the public function, lookup and all
        return anyio.lowlevel.checkpoint_if_cancelled
    return get_async_backend().checkpoint_if_cancelled


def loop_clock() -> Callable[[], float]:
    """The running backend's clock (what ``anyio.current_time()`` reads), found once:
    ``anyio.current_time()`` looks the backend up on every call."""
    if _on_asyncio():
        import asyncio
        import time

        clock = asyncio.get_running_loop().time
        # asyncio's own clock is a Python method around time.monotonic: read that
        # directly, a frame fewer each read (a runner reads it once a step, #22). A loop
        # with a clock of its own (uvloop, a test's) keeps it.
        own = getattr(clock, "__func__", None) is not asyncio.BaseEventLoop.time
        return clock if own else time.monotonic
    import trio

    return trio.current_time
