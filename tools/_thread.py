"""Sync tool bodies in a worker thread, never started once their caller gave up."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Generic, TypeVar

import anyio
import anyio.to_thread
from opentelemetry import trace

__all__ = ("LEFT_RUNNING_EVENT", "abandoned_tool_calls", "run_sync_abandonable")

_log = logging.getLogger("regiment.tools")

LEFT_RUNNING_EVENT = "regiment.tool.left_running"
"""The event on a cancelled call's span whose sync body went on running in its thread."""

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

    def run(self) -> T:
        with self._lock:
            if not self._open:
                raise _Abandoned
            self._open = False  # started: abandoning now no longer stops it
            self._thread = threading.current_thread()
        try:
            return self._body()
        finally:
            with self._lock, _abandoned_lock:
                _abandoned.discard(self)
                self._thread = None

    def abandon(self) -> bool:
        """Let the caller go; whether the body was running (it goes on, unseen)."""
        with self._lock:
            self._open = False
            if self._thread is None:
                return False
            with _abandoned_lock:
                _abandoned.add(self)  # type: ignore[arg-type]
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
        return await anyio.to_thread.run_sync(gate.run, abandon_on_cancel=True)
    except anyio.get_cancelled_exc_class():
        if gate.abandon():
            _left_running(body)
        raise


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
