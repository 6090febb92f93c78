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
from typing import Any, TypeVar, final

__all__ = ("ContextTurns", "in_context")

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


_ENDED = object()  # what a ``_runner`` yields once the coroutine sent to it has ended


@types.coroutine
def _runner() -> Generator[Any, Any, None]:
    """Awaits each coroutine sent to it, then yields ``_ENDED`` (and waits for the next).

    ``await`` (``yield from``) takes a coroutine's end with no exception; a Python
    ``coro.send`` that ends it raises ``StopIteration``, ~1.6k CPU instructions to make,
    catch and clear (issue #22). So the runner lives on between coroutines."""
    coro = yield
    while True:
        yield from coro
        coro = yield _ENDED


@final
class ContextTurns:
    """Runs coroutines that return ``None`` as :func:`in_context` does, in one context,
    reusing one runner generator: a coroutine's end raises no ``StopIteration``.

    For many short handlers in the same context (a run's planner takes every step's
    report so). A coroutine that raises, or is cancelled, takes its runner with it (the
    next one makes a fresh runner); two at once each have their own.
    """

    __slots__ = ("_context", "_idle")

    def __init__(self, context: contextvars.Context) -> None:
        self._context = context
        self._idle: Generator[Any, Any, None] | None = None  # a runner between coroutines

    @types.coroutine
    def run(self, coro: Coroutine[Any, Any, None]) -> Generator[Any, Any, None]:
        """Await ``coro`` with every step of it run inside the context."""
        runner = self._idle
        if runner is None:
            runner = _runner()
            runner.send(None)
        else:
            self._idle = None  # taken while this coroutine runs
        context = self._context
        value: Any = coro
        error: BaseException | None = None
        while True:
            if error is None:
                yielded = context.run(runner.send, value)
            else:
                yielded = context.run(runner.throw, error)
            if yielded is _ENDED:
                self._idle = runner
                return
            try:
                value, error = (yield yielded), None
            except BaseException as exc:  # handed to the coroutine, as await would
                value, error = None, exc
