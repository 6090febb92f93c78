"""Counting tasks in tests: a worker's parked step runners apart from the rest.

A worker keeps up to ``IDLE_RUNNERS`` runner tasks parked between steps
(``IdleRunners.park``), so after a burst of steps there are more tasks than
before it, none of them doing anything. Tests that check no work is left
behind count :func:`busy_tasks` (tasks not parked); :func:`idle_runners` counts
the parked ones, which must be none once the team has stopped.
"""

from __future__ import annotations

from collections.abc import Awaitable, Generator
from typing import Any

import anyio

__all__ = ("busy_tasks", "idle_runners")

_PARKED = "IdleRunners.park"  # the qualified name of the coroutine a parked runner waits in


def idle_runners() -> int:
    """How many running tasks are step runners parked between steps."""
    return sum(_parked(task.coro) for task in anyio.get_running_tasks())


def busy_tasks() -> int:
    """How many running tasks are not step runners parked between steps."""
    return sum(not _parked(task.coro) for task in anyio.get_running_tasks())


def _parked(coro: Generator[Any, Any, Any] | Awaitable[Any] | None) -> bool:
    """Whether the chain of awaits the task's coroutine is suspended in passes the park."""
    while coro is not None:
        code = getattr(coro, "cr_code", None) or getattr(coro, "gi_code", None)
        if code is not None and code.co_qualname == _PARKED:
            return True
        coro = getattr(coro, "cr_await", None) or getattr(coro, "gi_yieldfrom", None)
    return False
