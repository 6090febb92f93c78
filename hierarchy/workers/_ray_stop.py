"""Stopping a pool's replicas as the team stops, bounded however they are.

Each replica is first asked whether it answers (a small grace: ``STOP_GRACE``).
One that answers stops its MCP servers, hands over the log records it kept and
exports its spans, as before. One that does not (Ray is restarting it and its
build hangs, its node is frozen) is killed at once, with a WARNING saying what
went with it: asking it those things waited on it for up to 15 s, for nothing.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Collection, Sequence
from typing import Any

import anyio

from regiment.hierarchy.workers._ray_logs import take_from
from regiment.hierarchy.workers._ray_mcp import ReplicaServers

__all__ = ("STOP_GRACE", "stop_replicas")

_log = logging.getLogger("regiment.ray")
STOP_GRACE = 3.0  # seconds a replica has to answer as its team stops, before it is killed
_MCP_STOP_WAIT = 10.0  # seconds the replicas have to stop their MCP servers (4 s each at most)
_HAND_OVER_WAIT = 5.0  # seconds they have to hand their log records over and export spans
_KILLED = (
    "Ray replica %d of '%s' did not answer within %g s as the team stopped (%s): it was "
    "killed at once, and with it went the log records it made since its last step (see its "
    "Ray log files), the spans it had not exported yet, and the clean stop of its MCP "
    "servers, if it had any (their watchdogs end them)"
)


async def stop_replicas(
    ray: Any,
    handles: Sequence[Any],
    where: tuple[str, str],
    mcp: ReplicaServers,
    gone: Callable[[], bool],
    restarted: Collection[int] = (),
) -> None:
    """Stop the replicas ``handles`` (``where``: the worker or pool they serve, and their
    control concurrency group): those that answer stop their MCP servers, hand their
    log records over and export their spans; the others are killed at once, saying so
    (unless the cluster is ``gone`` by then: this process has left Ray; or the replica
    is one the team killed for Ray to restart, ``restarted``, not back since: that was
    said as it was killed, and it has made nothing since). Shielded: the team's stop is
    under way. The caller kills them all afterwards."""
    label, group = where
    with anyio.CancelScope(shield=True):
        answering: list[int] = []
        async with anyio.create_task_group() as tg:
            for index, handle in enumerate(handles):
                ours = index in restarted
                tg.start_soon(_answers, ray, (index, handle, ours), where, gone, answering)
        if gone():
            return
        await mcp.stop(_MCP_STOP_WAIT, sorted(answering))
        if gone():
            return
        with anyio.move_on_after(_HAND_OVER_WAIT):
            async with anyio.create_task_group() as tg:
                for index in sorted(answering):
                    tg.start_soon(_hand_over, handles[index], index, label, group)


async def _answers(
    ray: Any,
    replica: tuple[int, Any, bool],
    where: tuple[str, str],
    gone: Callable[[], bool],
    answering: list[int],
) -> None:
    """Add the replica (its index, handle, and whether the team had it restarted) to
    ``answering`` if it answers within the grace; else kill it."""
    index, handle, ours = replica
    label, group = where
    try:
        with anyio.fail_after(STOP_GRACE):
            await handle.ready.options(concurrency_group=group).remote()
    except TimeoutError:
        why = "no answer"
    except ray.exceptions.ActorUnavailableError:
        why = "Ray is restarting it"
    except ray.exceptions.RayActorError as exc:  # gone for good: nothing was left there
        _log.debug("Ray replica %d of '%s' is gone as the team stops: %r", index, label, exc)
        return
    except Exception as exc:
        why = f"{type(exc).__name__}: {exc}"
    else:
        answering.append(index)
        return
    if gone():  # (another pool found the cluster gone meanwhile: said there)
        return
    with contextlib.suppress(Exception):
        ray.kill(handle, no_restart=True)
    if ours:  # killed for a restart by this team (said then), not back yet: no news
        _log.debug(_KILLED, index, label, STOP_GRACE, why, extra={"worker": label})
        return
    _log.warning(_KILLED, index, label, STOP_GRACE, why, extra={"worker": label})


async def _hand_over(handle: Any, index: int, label: str, group: str) -> None:
    """The replica's kept log records, logged here; its spans, exported."""
    await take_from(handle, index, group, label)
    try:
        await handle.flush.remote()
    except Exception as exc:
        _log.debug("Ray replica %d of '%s' did not export its spans: %r", index, label, exc)
