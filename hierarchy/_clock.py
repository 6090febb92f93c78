"""A run's wall clock: the ``wall_clock`` budget, which stands still while a human decides.

Time a call of the run spends waiting for an approval decision (on the team's
desk, or in an in-process ``Toolset(approver=...)`` such as ``--approve ask``) is
not the run's to spend: a person reading a request is not the team being slow.
So the clock stops while at least one call of the run waits (waits of parallel
steps overlap, and count once) and goes on with what was left when the last wait
ends. A paused run has no clock at all; a resume starts a fresh one.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from typing import final

import anyio

__all__ = ("RunClock",)


@final
class RunClock:
    """One run's wall-clock deadline, held while calls of the run wait for a decision."""

    __slots__ = ("_holds", "_left", "_timer")

    def __init__(self) -> None:
        self._timer: anyio.CancelScope | None = None  # while the deadline counts down
        self._left: float | None = None  # seconds left, while held
        self._holds = 0

    async def run(self, seconds: float, expired: Callable[[], Awaitable[None]]) -> None:
        """Count ``seconds`` of unheld time down, then call ``expired`` (cancel to stop)."""
        self._left = seconds
        deadline = math.inf if self._holds else anyio.current_time() + seconds
        timer = self._timer = anyio.CancelScope(deadline=deadline)
        try:
            with timer:
                await anyio.sleep_forever()
        finally:
            self._timer = None
        # Only the timer's own deadline ends the block normally; a cancel from outside
        # (the run has ended) propagates past it.
        await expired()

    @contextmanager
    def held(self) -> Iterator[None]:
        """Stop the clock for the block (a call waits for a human's decision)."""
        self._holds += 1
        timer = self._timer
        if self._holds == 1 and timer is not None:
            self._left = max(0.0, timer.deadline - anyio.current_time())
            timer.deadline = math.inf
        try:
            yield
        finally:
            self._holds -= 1
            timer = self._timer
            if self._holds == 0 and timer is not None and self._left is not None:
                timer.deadline = anyio.current_time() + self._left
