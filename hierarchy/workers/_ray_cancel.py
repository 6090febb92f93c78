"""Ending a cut step on its Ray replica: its remote cancel, waited for up to the
worker's ``cancel_grace``, and a replica restarted when its step will not stop.

A step cut in the team's process (a run's cancel, a replan, ``step_timeout``, the
run's wall clock) is cancelled on its replica too (the step's own cancel scope
there), and the caller waits until it has ended there, its tools' cleanup included,
so no work of a cut step goes on once the cut is over. A tool that ignores the
cancel (it catches ``CancelledError``, or shields its work) kept that wait going for
10 s, past the step's own grace, holding the team's stop as long; then the step
simply went on running on its replica. The wait is now the worker's
``cancel_grace`` (as in-process, where the step is given up after it), and a step
still running after it gets its replica killed, for Ray to restart it: nothing of
the step runs on, and the replica's other steps are retried once on another one
(as for any replica lost mid-step).
"""

from __future__ import annotations

import logging
import math
from typing import Any

import anyio

__all__ = ("ended_remotely", "restart")

_log = logging.getLogger("regiment.ray")
_CANCEL_FAILED = (
    "worker '%s': cancelling step %s on its Ray replica failed (%s: %s); "
    "the step may still run there until its replica stops"
)
_NOT_STOPPED = (
    "worker '%s': step %s did not end on its Ray replica %d within %g s of its cancel "
    "(Worker(cancel_grace=...)): a tool there ignores cancellation. The replica was killed "
    "so that nothing of the step runs on; Ray restarts it (within Ray(max_restarts=...)), "
    "and the other steps it was running are retried once on another replica. A tool must "
    "let cancellation through: re-raise CancelledError, and shield only a short cleanup, "
    "bounded (anyio.move_on_after(seconds, shield=True))"
)


async def ended_remotely(ray: Any, handle: Any, key: str, worker: str, grace: float | None) -> bool:
    """Cancel step ``key`` on its replica ``handle`` and wait until it has ended there,
    up to ``grace`` seconds (``None``: however long it takes, as the worker's
    ``cancel_grace=None`` says). Whether it ended (or nothing of it can run any more:
    the replica is gone); ``False``: it still runs, and its replica must be restarted.
    The caller shields this call (the step's cancel is under way)."""
    with anyio.move_on_after(math.inf if grace is None else grace) as waited:
        try:
            await handle.cancel.remote(key)
        except ray.exceptions.RayActorError:
            return True  # the replica is gone (or restarting): nothing of the step runs there
        except Exception as exc:
            _log.warning(_CANCEL_FAILED, worker, key, type(exc).__name__, exc)
            return True  # not known to be running: a kill would cut its replica's others
    return not waited.cancelled_caught


def restart(ray: Any, handle: Any, step: tuple[str, str, int], grace: float | None) -> None:
    """``step`` (its worker, key and replica's index) did not end on its replica
    ``handle`` within ``grace`` of its cancel: kill the replica for Ray to restart it,
    so nothing of the step runs on, saying so."""
    worker, key, index = step
    try:
        ray.kill(handle, no_restart=False)
    except Exception as exc:  # (it died meanwhile: nothing of the step runs there)
        _log.debug("worker '%s': killing Ray replica %d failed: %r", worker, index, exc)
    _log.warning(_NOT_STOPPED, worker, key, index, grace or 0.0, extra={"worker": worker})
