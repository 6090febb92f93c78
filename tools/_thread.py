"""Sync tool bodies in a worker thread, never started once their caller gave up."""

from __future__ import annotations

import inspect
import logging
import threading
from collections.abc import Callable
from contextvars import ContextVar
from typing import Generic, TypeVar, cast

import anyio
import anyio.from_thread
import anyio.to_thread
from opentelemetry import trace

__all__ = (
    "LEFT_RUNNING_EVENT",
    "HeldTokens",
    "LeftRunning",
    "abandoned_tool_calls",
    "held_tokens",
    "left_running",
    "run_sync_abandonable",
)

_log = logging.getLogger("regiment.tools")

LEFT_RUNNING_EVENT = "regiment.tool.left_running"
"""The event on a cancelled call's span whose sync body went on running in its thread."""


class HeldTokens:
    """The concurrency tokens one attempt of a tool call holds while its body runs.

    A sync body left running (its call timed out or was cancelled) keeps them until
    it ends, so a tool's ``max_concurrency`` counts the bodies that really run: with
    ``max_concurrency=1`` a call never starts its body beside an abandoned one.
    """

    __slots__ = ("borrower", "kept", "limiters")

    def __init__(self) -> None:
        self.borrower = object()
        self.limiters: list[anyio.CapacityLimiter] = []
        self.kept = False  # a body left running holds them: it gives them back

    def release(self) -> None:
        """Give every token back (in the event loop's thread)."""
        for limiter in reversed(self.limiters):
            limiter.release_on_behalf_of(self.borrower)

    def release_from_thread(self) -> None:
        """Give them back from the thread of a body left running, now that it ended."""
        try:
            anyio.from_thread.run_sync(self.release)
        except Exception:  # its event loop has ended, and the limits (one per loop) with it
            _log.debug("a tool body left running ended after its event loop", exc_info=True)


# The tokens the calling attempt holds (``_run``'s ``_holding`` sets it).
held_tokens: ContextVar[HeldTokens | None] = ContextVar("regiment.tools.held", default=None)


class LeftRunning:
    """Whether the body of a timed-out attempt runs on in its thread, to wait for it.

    A retry started at once would run a second body beside it (two payments in flight
    with one idempotency key), so the attempt loop waits for it first (:meth:`ended_within`).
    A call that runs on where no end can be seen (an MCP server's: see ``unseen``) is
    not tried again at all; ``why`` says so.
    """

    __slots__ = ("_ended", "why")

    def __init__(self) -> None:
        self._ended: anyio.Event | None = None  # set by the body left running as it ends
        self.why = ""  # a body runs on whose end cannot be seen: why it is not tried again

    def runs_on(self, ended: anyio.Event) -> None:
        """A body was left running; ``ended`` is set as it ends."""
        self._ended = ended

    def unseen(self, why: str) -> None:
        """The attempt may run on where its end cannot be seen (``why``, said after the
        timeout in the call's error): no retry is made beside it."""
        self.why = why

    async def ended_within(self, seconds: float) -> bool:
        """Whether no body of the attempt runs on, waiting up to ``seconds`` for it."""
        if self.why:
            return False
        if self._ended is None:
            return True
        with anyio.move_on_after(seconds):
            await self._ended.wait()
            return True
        return False


# The attempt whose timeout is running (``_run``'s ``_within`` sets it).
left_running: ContextVar[LeftRunning | None] = ContextVar("regiment.tools.left", default=None)

# The sync tool bodies still running whose callers gave up (cancelled, timed out).
_abandoned: set[_Gate[object]] = set()
_abandoned_lock = threading.Lock()


def abandoned_tool_calls() -> int:
    """How many sync tool bodies whose callers gave up (a cancelled or timed-out call)
    still run in their threads: Python cannot stop them, and waits for them to end
    before it exits."""
    with _abandoned_lock:
        return len(_abandoned)


T = TypeVar("T")


class _Abandoned(Exception):
    """The caller gave up before the thread got to the body; nobody sees this."""


class _Carried(Exception):
    """A ``GeneratorExit`` the body raised, carried to the caller's task as an Exception:
    set on the call's future as it is, asyncio throws it into the waiting coroutine,
    which closes the whole chain of them, up to the event loop (``anyio.run`` raised it)."""

    def __init__(self, raised: GeneratorExit) -> None:
        super().__init__()
        self.raised = raised


class _Coroutine:
    """A coroutine a body returned, carried out of its thread in a box."""

    __slots__ = ("coroutine",)

    def __init__(self, coroutine: object) -> None:
        self.coroutine = coroutine


class _Gate(Generic[T]):
    """Decides, under a lock, whether the body starts or the caller has gone.

    Once :meth:`abandon` has returned, :meth:`run` can no longer start the body,
    so a cancel that has returned never has a body start behind it.
    """

    def __init__(self, body: Callable[[], T]) -> None:
        self._body = body
        self._lock = threading.Lock()
        self._open = True
        self._thread: threading.Thread | None = None  # while the body runs
        self._on_end: Callable[[], None] | None = None  # left running: called as it ends

    def run(self) -> T:
        with self._lock:
            if not self._open:
                raise _Abandoned
            self._open = False  # started: abandoning now no longer stops it
            self._thread = threading.current_thread()
        try:
            value = self._body()
            if inspect.isgenerator(value):  # its body runs as it is read: read it here,
                return cast(T, list(value))  # not on the event loop, beyond any timeout
            if inspect.iscoroutine(value):  # trio refuses it, naming its own internals
                return cast(T, _Coroutine(value))
            return value
        except GeneratorExit as exc:
            raise _Carried(exc) from None
        finally:
            with self._lock, _abandoned_lock:
                _abandoned.discard(self)
                self._thread = None
                on_end, self._on_end = self._on_end, None
            if on_end is not None:
                on_end()

    def abandon(self, on_end: Callable[[], None] | None = None) -> bool:
        """Stop the body from starting; whether it runs on (then ``on_end`` is called
        in its thread as it ends)."""
        with self._lock:
            self._open = False
            if self._thread is None:
                return False
            with _abandoned_lock:  # running: it goes on, unseen
                _abandoned.add(self)  # type: ignore[arg-type]
            self._on_end = on_end
            return True


async def run_sync_abandonable(body: Callable[[], T]) -> T:
    """Run ``body`` in a worker thread; a cancel gives control back at once.

    A body already running cannot be stopped and finishes in the background
    (its result is dropped). A body whose thread had not started it when the
    caller was cancelled never starts: with ``abandon_on_cancel=True`` a job
    queued for a thread would otherwise still run after the cancel returned.
    """
    gate = _Gate(body)
    try:
        value = await anyio.to_thread.run_sync(gate.run, abandon_on_cancel=True)
        # A coroutine a plain body returned (an async call it did not await): the
        # caller says what is wrong with it, on either backend.
        return cast(T, value.coroutine) if isinstance(value, _Coroutine) else value
    except _Carried as carried:  # raised here, it is the call's failure (regiment._stray)
        raise carried.raised from None
    except anyio.get_cancelled_exc_class():
        held, left = held_tokens.get(), left_running.get()
        ended = None if left is None else anyio.Event()
        if gate.abandon(_on_end(held, ended)):
            if left is not None and ended is not None:
                left.runs_on(ended)
            _left_running(body)
            if held:
                held.kept = True  # the body keeps its call's tokens until it ends
        raise


def _on_end(held: HeldTokens | None, ended: anyio.Event | None) -> Callable[[], None] | None:
    """What a body left running calls (in its thread) as it ends: give its call's
    tokens back, and wake the retry that waits for it."""
    if ended is None:
        return None if held is None else held.release_from_thread

    def end() -> None:
        if held is not None:
            held.release_from_thread()
        try:
            anyio.from_thread.run_sync(ended.set)
        except Exception:  # its event loop has ended: nobody waits any more
            _log.debug("a tool body left running ended after its event loop", exc_info=True)

    return end


def _left_running(body: Callable[[], object]) -> None:
    """Say that a cancelled call's body runs on: its span (the call's, current) would
    read cancelled, as if the body had stopped, yet its side effects still happen."""
    name = getattr(getattr(body, "func", body), "__name__", "a sync tool")
    trace.get_current_span().add_event(LEFT_RUNNING_EVENT, {"code.function": name})
    _log.warning(
        "%s was cancelled while its body ran in a worker thread: Python cannot stop a "
        "thread, so the body runs to its end unseen and its result is dropped "
        "(abandoned_tool_calls() counts such bodies); make the tool async if it must "
        "stop when its step is cut",
        name,
        extra={"tool_function": name},
    )
