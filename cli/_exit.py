"""How the ``regiment`` command leaves: a reader that closed its stdout, and sync tool
bodies still running in threads that Python waits for before it exits."""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from types import FrameType
from typing import TextIO, final

import anyio

from regiment._script import EXIT_BROKEN_PIPE, all_of, reader_left, stdout_closed
from regiment._signals import EXIT_INTERRUPTED, leave_now, signal_exit_code
from regiment._signals import watch_signals as watch_until
from regiment._text import counted
from regiment.tools import abandoned_tool_calls

_SIGNAL_CODES = (EXIT_INTERRUPTED, signal_exit_code(signal.SIGTERM))

__all__ = (
    "EXIT_BROKEN_PIPE",
    "EXIT_INTERRUPTED",
    "LastWords",
    "Terminated",
    "interrupted",
    "leave_now",
    "reader_left",
    "signal_exit_code",
    "slow_stop_notice",
    "stand_in_for_closed_streams",
    "stdout_closed",
    "terminated_raises",
    "wait_for_tool_threads",
    "was_closed",
    "watch_signals",
)


@final
class LastWords:
    """What the command does when a second Ctrl-C (or SIGTERM) makes it leave at once,
    cutting its run's wind-down short: it ends the events output (``end_events``) and
    says how far the run got (``summary()``), once the run command knows (``None``
    before it has a run, and once it has done so itself)."""

    __slots__ = ("end_events", "summary")

    def __init__(self) -> None:
        self.summary: Callable[[], str] | None = None
        self.end_events: Callable[[], None] | None = None

    @contextlib.contextmanager
    def told(self, summary: Callable[[], str], end_events: Callable[[], None]) -> Iterator[None]:
        """While inside, a forced exit ends the events with ``end_events`` (the events
        output is open); ``summary`` stays until the command clears it."""
        self.summary, self.end_events = summary, end_events
        try:
            yield
        finally:
            self.end_events = None

    def say(self) -> None:
        """End the events output, if still open, and print the command's last line."""
        if self.end_events is not None:
            with contextlib.suppress(Exception):  # leaving matters more than this line
                self.end_events()
        if self.summary is None:
            print("regiment: interrupted; exiting without waiting", file=sys.stderr, flush=True)
            return
        print(
            f"regiment: interrupted; cancelled the run {self.summary()}; exiting without "
            "waiting for it to wind down (what it had in flight may not have stopped)",
            file=sys.stderr,
            flush=True,
        )


async def watch_signals(
    interrupt: anyio.Event, last_words: LastWords, got: list[int] | None = None
) -> None:
    """The first Ctrl-C (or SIGTERM) sets ``interrupt`` (which cancels the run, or stops
    the service), noting the signal in ``got``; a second one exits at once, even while a
    tool that ignores cancellation holds the team's stop, saying how far the run got
    (the line the command would have ended with) and that its stop was cut short."""
    await watch_until(interrupt, last_words.say, got)


def interrupted(exc: BaseException) -> bool:
    """Whether ``exc`` is a Ctrl-C that came before the command watched for it (while it
    imported a team file's modules, say): alone, or all of an exception group, as trio
    raises it out of the task group it landed in."""
    return all_of(exc, KeyboardInterrupt)


class Terminated(BaseException):  # a signal, as KeyboardInterrupt is
    """A SIGTERM while the command watches no signal of its own (``validate``, importing a
    team file's modules): it ends the command as Ctrl-C does there, exit 143."""


def terminated_raises(work: Callable[[], int]) -> int:
    """``work()``, a SIGTERM meanwhile raising :class:`Terminated` in it (Python's own
    handling ended the process without a word); in the main thread only."""
    if threading.current_thread() is not threading.main_thread():
        return work()

    def terminate(signum: int, frame: FrameType | None) -> None:
        raise Terminated

    previous = signal.signal(signal.SIGTERM, terminate)
    try:
        return work()
    finally:
        signal.signal(signal.SIGTERM, previous)


def stand_in_for_closed_streams(*names: str) -> None:
    """A command started with its stderr (or stdout) closed, ``2>&-``: Python then has
    ``sys.stderr`` ``None``, which ``print(file=...)`` takes for stdout, so notes went into
    the answer, and writing to it failed. /dev/null takes its place (and its descriptor,
    for the processes the command starts): what would go there goes nowhere, as asked."""
    for name in names:
        if getattr(sys, name) is None:
            stand_in = open(os.devnull, "w", encoding="utf-8")  # noqa: SIM115
            _STAND_INS.add(id(stand_in))
            setattr(sys, name, stand_in)


def was_closed(stream: TextIO) -> bool:
    """Whether ``stream`` stands in for a stream the command was started without (``>&-``):
    what is written to it is lost, which for a run's answer is an error."""
    return id(stream) in _STAND_INS


_STAND_INS: set[int] = set()  # the ids of the /dev/null streams in closed ones' places


def wait_for_tool_threads(code: int) -> None:
    """Say so when sync tool bodies whose calls were given up (a Ctrl-C, a timeout) still
    run in threads: Python cannot stop them and waits for them before it exits. A
    Ctrl-C (or SIGTERM) meanwhile exits at once, with ``code``; when that was 0 or a
    signal's own (130, 143), with the code of the signal that forced the exit."""
    busy = abandoned_tool_calls()
    if not busy:
        return

    def exit_now(signum: int, frame: FrameType | None) -> None:
        leave_now(code if code not in (0, *_SIGNAL_CODES) else signal_exit_code(signum))

    if threading.current_thread() is threading.main_thread():
        # Before the line is printed: a Ctrl-C that comes as soon as it is read must not
        # land while it is printed, outside the wait, where a KeyboardInterrupt would
        # start an interpreter exit that waits for the threads after all.
        signal.signal(signal.SIGINT, exit_now)
        signal.signal(signal.SIGTERM, exit_now)  # what a service manager sends next
    print(
        f"regiment: waiting for {counted(busy, 'tool call')} still running in a thread "
        "(Python cannot stop a sync tool; make tools that may hang async); "
        "press Ctrl-C to exit without waiting",
        file=sys.stderr,
        flush=True,
    )
    try:
        while abandoned_tool_calls():
            time.sleep(0.1)
    except KeyboardInterrupt:  # our handler was not installed (not the main thread)
        exit_now(signal.SIGINT, None)


class _StopNotice(logging.Handler):
    """The team's "still stopping" warning as one line of the command, with the way out."""

    def __init__(self, stream: TextIO) -> None:
        super().__init__(logging.WARNING)
        self._stream = stream

    def emit(self, record: logging.LogRecord) -> None:
        line = f"regiment: {record.getMessage()}; press Ctrl-C to exit without waiting"
        print(line, file=self._stream, flush=True)


@contextlib.contextmanager
def slow_stop_notice(stream: TextIO) -> Iterator[None]:
    """While inside, a team whose stop is held by a task that ignores cancellation (a
    Ctrl-C's run cancelled, a tool that goes on) says so on ``stream``, without ``-v``."""
    handler = _StopNotice(stream)
    logger = logging.getLogger("regiment.team")
    logger.addHandler(handler)
    try:
        yield
    finally:
        logger.removeHandler(handler)
