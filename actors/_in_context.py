"""Running a coroutine in a context of one's choosing, in the task that awaits it.

An actor that handles a message in the sender's task (``receive_here``) must
run the handler as the actor's own: the current actor (the sender of what the
handler sends), the trace context and log marks of the tasks it starts are the
actor's, not the sender's. ``contextvars.Context.run`` does that for a plain
call; :func:`in_context` does it for a coroutine, one step at a time, so the
awaiting task's own context is untouched between steps and after.
"""

from __future__ import annotations

import contextvars
import types
from collections.abc import Coroutine, Generator
from typing import Any, TypeVar

__all__ = ("in_context",)

T = TypeVar("T")


@types.coroutine
def in_context(
    context: contextvars.Context, coro: Coroutine[Any, Any, T]
) -> Generator[Any, Any, T]:
    """Await ``coro`` with every step of it run inside ``context``.

    What the coroutine yields to the event loop, and what the loop sends or
    throws back (a cancellation, say), pass through unchanged. ``context`` must
    not be entered elsewhere while a step runs (one task at a time uses it).
    """
    send, throw = coro.send, coro.throw
    value: Any = None
    error: BaseException | None = None
    while True:
        try:
            yielded = context.run(send, value) if error is None else context.run(throw, error)
        except StopIteration as stop:
            return stop.value  # type: ignore[no-any-return]
        try:
            value, error = (yield yielded), None
        except BaseException as exc:  # handed to the coroutine, as await would
            value, error = None, exc
