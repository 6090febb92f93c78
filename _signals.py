"""Stopping on SIGINT or SIGTERM: the first one asks for a wind-down, a second one leaves
at once. Shared by ``regiment run``, ``regiment serve`` (``serve_command``) and
``regiment mcp`` (``serve_team``)."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from collections.abc import Callable

import anyio

__all__ = (
    "EXIT_INTERRUPTED",
    "EXIT_TERMINATED",
    "at_leave_now",
    "leave_now",
    "leave_on_signal",
    "signal_exit_code",
    "watch_signals",
)

EXIT_INTERRUPTED = 130  # 128 + SIGINT
EXIT_TERMINATED = 143  # 128 + SIGTERM


def signal_exit_code(signum: int) -> int:
    """The exit code of a process that ``signum`` stopped, as a shell reports it (128 + it)."""
    return EXIT_TERMINATED if signum == signal.SIGTERM else EXIT_INTERRUPTED


_AT_ONCE: list[Callable[[], None]] = []  # what leave_now does first (no exit hooks run)


def at_leave_now(hook: Callable[[], None]) -> None:
    """Have :func:`leave_now` call ``hook`` (quick, waiting for nothing) before it exits:
    what the exit hooks would have stopped that would otherwise outlive the process."""
    if hook not in _AT_ONCE:
        _AT_ONCE.append(hook)


def leave_now(code: int) -> None:
    """Exit the process at once with ``code``, waiting for nothing (what a second
    Ctrl-C asks for): stdout is flushed first, as far as it can be, and the
    :func:`at_leave_now` hooks run."""
    with contextlib.suppress(Exception):  # the main thread may be writing stdout
        sys.stdout.flush()
    for hook in _AT_ONCE:
        with contextlib.suppress(Exception):  # leaving matters more
            hook()
    os._exit(code)


async def watch_signals(
    interrupt: anyio.Event, say_last: Callable[[], None], got: list[int] | None = None
) -> None:
    """The first Ctrl-C (or SIGTERM) sets ``interrupt`` (which cancels the run, or stops
    the service), noting the signal in ``got``; a second one exits at once (130, or 143
    for a SIGTERM, as a terminated process does), even while a tool that ignores
    cancellation holds the team's stop, after ``say_last()`` (the line that says the stop
    was cut short)."""
    with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async for signum in signals:
            if interrupt.is_set():
                say_last()
                leave_now(signal_exit_code(signum))
            if got is not None:
                got.append(signum)
            interrupt.set()


async def leave_on_signal(say: Callable[[], None]) -> None:
    """Until cancelled, the first Ctrl-C (or SIGTERM) exits at once (130, 143 for a
    SIGTERM) after ``say()``: for a command with nothing to wind down (it reads the
    journal, or makes one decision, a single transaction). Cancelling its task cannot
    stop a statement that waits on the database in a thread (an SQLite journal's busy
    wait, up to its ``busy_timeout``), so the command would wait on, Ctrl-C or not."""
    with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async for signum in signals:
            say()
            leave_now(signal_exit_code(signum))
