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

That wait is not the run's: the step's report is made in the team's process at the cut
(the replica's own is dropped with the cancelled stream), so the run goes on (or ends)
at once, as it would with a step that stopped there at once. The wait, and a restart
after it, run in a task of the worker actor's (:class:`CutEnds`): the team's stop waits
for it (up to the grace), so no work of a cut step outlives the team. Before, each run
that cut such a step (its cancel, a replan, a timeout) waited the whole grace itself.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import math
from collections.abc import Awaitable, Callable
from typing import Any

import anyio

__all__ = ("CutEnds", "cut_remotely", "end_cut", "ended_remotely", "restart")

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


@dataclasses.dataclass(frozen=True, slots=True)
class CutEnds:
    """How a Ray worker actor's cut steps end on their replicas: each has ``grace``
    seconds (its ``cancel_grace``), waited for in a task ``start_soon`` starts (the
    actor's: its stop waits for them), not by the step's run."""

    grace: float | None
    start_soon: Callable[[Callable[[], Awaitable[None]]], None]


def cut_remotely(
    ray: Any,
    call: tuple[Any, Any],
    step: tuple[str, str, int],
    ends: CutEnds,
    lost: Callable[[int], None],
) -> None:
    """Cancel ``step`` (its worker, key and replica's index), cut in the team's process,
    on its replica (``call``: its Ray stream and the replica's handle), and leave the
    wait for its end there to a task ``ends`` starts (``end_cut``). Not recursive: Ray
    would also cancel the calls the step's tools make, and a tool's cleanup (telling a
    service it stopped) must still get through."""
    stream, handle = call
    ray.cancel(stream, recursive=False)
    ends.start_soon(functools.partial(end_cut, ray, handle, step, ends.grace, lost))


async def end_cut(
    ray: Any,
    handle: Any,
    step: tuple[str, str, int],
    grace: float | None,
    lost: Callable[[int], None],
) -> None:
    """Wait for the cut ``step`` (its worker, key and replica's index) to end on its
    replica ``handle`` (``ended_remotely``); still running after ``grace``: ``lost``
    (its replica is out of turn) and the replica is restarted. Shielded: the actor's
    stop waits for it, as for a step of its own."""
    worker, key, index = step
    with anyio.CancelScope(shield=True):
        if not await ended_remotely(ray, handle, key, worker, grace):
            lost(index)
            restart(ray, handle, step, grace)


async def ended_remotely(ray: Any, handle: Any, key: str, worker: str, grace: float | None) -> bool:
    """Cancel step ``key`` on its replica ``handle`` and wait until it has ended there,
    up to ``grace`` seconds (``None``: however long it takes, as the worker's
    ``cancel_grace=None`` says). Whether it ended (or nothing of it can run any more:
    the replica is gone); ``False``: it still runs, and its replica must be restarted.
    The caller shields this call (the step's cancel is under way: ``end_cut``)."""
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
