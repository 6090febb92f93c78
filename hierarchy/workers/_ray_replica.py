"""A replica's life seen from the team's process: why it did not start, and waiting
for one that Ray is restarting to answer again (a step's retry, its MCP servers)."""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import anyio

from regiment.errors import ConfigError, WorkerLost

__all__ = ("replica_back", "start_error", "when_back")

_T = TypeVar("_T")
_COLOURS = re.compile(r"\x1b\[[0-9;]*m")  # Ray's error texts' terminal colours
_FIRST_DELAY, _MOST_DELAY = 0.1, 2.0  # seconds between asks while Ray restarts it


async def when_back(
    ask: Callable[[], Awaitable[_T]], unavailable: type[Exception], within: float
) -> _T:
    """``ask()``'s answer once the replica answers: asked again, a little later each
    time, while Ray says it is restarting (``unavailable``). Cancellable at any time.

    Raises:
        TimeoutError: it did not answer within ``within`` seconds.
        Exception: what ``ask()`` raised otherwise (Ray's ``ActorDiedError``: gone for good).
    """
    delay = _FIRST_DELAY
    with anyio.fail_after(within):
        while True:
            try:
                return await ask()
            except unavailable:
                await anyio.sleep(delay)
                delay = min(delay * 2, _MOST_DELAY)


async def replica_back(ray: Any, handle: Any, within: float, group: str, lost: WorkerLost) -> None:
    """Before a step is retried on replica ``handle`` (after ``lost``): wait
    until it answers, if Ray is restarting it (its process died too, or it is the pool's
    only replica), up to ``within`` seconds (``Ray(start_timeout=...)``). A replica gone
    for good returns at once: the retry on it fails as the first attempt did.

    Raises:
        WorkerLost: it did not come back within ``within`` seconds.
    """
    ask = handle.ready.options(concurrency_group=group).remote  # a restarted one's queue is empty
    try:
        await when_back(ask, ray.exceptions.ActorUnavailableError, within)
    except TimeoutError:
        raise WorkerLost(
            f"{lost}; the Ray replica to retry the step on was restarting and did not "
            f"come back within {within:g} s (Ray(start_timeout=...)): raise it for a "
            "node slow to start one, or give the pool more replicas"
        ) from lost
    except ray.exceptions.RayActorError:
        return  # gone for good (its max_restarts used): the retry finds out at once


def start_error(exc: Exception) -> str:
    """Why a replica did not start: for an error its build raised, that error's own
    line (Ray's text is the whole remote traceback, in terminal colours)."""
    text = _COLOURS.sub("", str(exc))
    lines = [line for line in text.splitlines() if line.strip()]
    if not getattr(exc, "actor_init_failed", False) or not lines:
        return text
    return lines[-1].removeprefix(f"{ConfigError.__module__}.{ConfigError.__name__}: ")
