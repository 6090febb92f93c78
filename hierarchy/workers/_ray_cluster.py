"""Telling "the whole Ray cluster went away" from "a replica was lost".

A lost replica (its process killed, its node gone) leaves the cluster's head, the
GCS, answering: the step is retried on another replica. When the head itself goes
(``ray stop`` on it, the head machine lost), every replica is gone with it, and a
retry or a replan would only fail again: the step fails with ``ClusterLost``, and
the run stops where ``resume`` can finish it. The GCS is probed with plain TCP
connects to the address the team joined: Ray's own clients wait up to a minute for
a GCS to come back before they give up, and then end the whole process: once a
cluster is known to be gone, this process disconnects from Ray (``leave_lost``), so
it lives on, and a team started later joins Ray again. Every pool on that cluster
learns of the loss at once: its steps fail with ``ClusterLost`` rather than reaching
for a Ray that is shut down, and nothing is asked of the replicas any more (no
cancel, no MCP stop, no span flush: each would wait seconds for no answer).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import anyio

from regiment.errors import ClusterLost, WorkerLost
from regiment.hierarchy.workers._ray_join import leave_lost

__all__ = ("ClusterProbe",)

_log = logging.getLogger("regiment.ray")
_CONNECT_WAIT = 1.0  # seconds a connect may take before the GCS counts as unreachable
_PROBES = 12  # connects, _GAP apart: a head being stopped still answers for a moment
_GAP = 0.25
_EVERY = 2.0  # seconds between the GCS probes while steps wait on the cluster (one per pool)
_T = TypeVar("_T")
_gone: dict[str, str] = {}  # GCS address -> why: clusters this process knows are gone


class ClusterProbe:
    """The GCS address of the cluster a team's replicas run on, and whether it answers."""

    __slots__ = ("_last", "_ray", "_went", "address")

    def __init__(self, ray: Any) -> None:
        self._ray = ray
        self._went: str | None = None  # why the cluster is known to be gone: every step fails
        try:
            self.address: str | None = str(ray.get_runtime_context().gcs_address)
        except Exception:  # an older Ray, or one that has no address to give: no probe
            self.address = None
        _gone.pop(self.address or "", None)  # this process just joined it: it is back
        self._last = (float("-inf"), True)  # when the GCS was last probed, and if it answered

    async def watched(self, wait: Callable[[], Awaitable[_T]], worker: str) -> _T:
        """``wait()``'s result (or error), or ``WorkerLost`` once the GCS stops answering
        meanwhile: a step's stream would never end then (Ray learns of a replica's death
        from the GCS), until Ray's client gives up on it and ends the whole process."""
        if self.address is None:
            return await wait()
        outcome: list[tuple[bool, Any]] = []
        async with anyio.create_task_group() as group:

            async def waiting() -> None:
                try:
                    outcome.append((True, await wait()))
                except Exception as exc:  # raised below, not wrapped in a group
                    outcome.append((False, exc))
                group.cancel_scope.cancel()

            group.start_soon(waiting)
            while True:
                await anyio.sleep(_EVERY)
                if not await self._answers() and await self.gone():  # not a blip: gone
                    break
            group.cancel_scope.cancel()
        if not outcome:
            raise WorkerLost(
                f"worker '{worker}': the Ray cluster at {self.address} answers no more"
            )
        done, value = outcome[0]
        if not done:
            raise value
        result: _T = value
        return result

    async def _answers(self) -> bool:
        """Whether the GCS answers; probed at most once each ``_EVERY`` for all steps."""
        at, answered = self._last
        now = anyio.current_time()
        if now - at < _EVERY:
            return answered
        self._last = (now, True)  # taken: the other steps' watches wait for the next turn
        answered = not await self.gone(probes=1)
        self._last = (now, answered)
        return answered

    async def gone(self, probes: int = _PROBES) -> bool:
        """Whether the GCS stopped answering: two connects in a row fail, within a few a
        moment apart (a head being stopped still answers for a moment; a blip is not a
        loss). A step is not retried before this: a call to a replica Ray restarts waits
        for a GCS that is gone."""
        if self.address is None:
            return False
        host, _, port = self.address.rpartition(":")
        failed = 0
        for probe in range(probes):
            if probe:
                await anyio.sleep(_GAP)
            try:
                with anyio.fail_after(_CONNECT_WAIT):
                    stream = await anyio.connect_tcp(host.strip("[]"), int(port))
            except (OSError, TimeoutError):
                failed += 1
                if failed == 2 or probes == 1:
                    return True
                continue
            failed = 0
            await stream.aclose()
        return False

    @property
    def went(self) -> str | None:
        """Why the cluster is known to be gone (learnt by this pool or another), if it is."""
        if self._went is None and self.address is not None:
            self._went = _gone.get(self.address)
        return self._went

    def lost(self, worker: str, cause: BaseException) -> ClusterLost:
        """The error of ``worker``'s step once the cluster is gone (logged: nobody may be
        reading the run's events); from now on every step on the cluster fails so at
        once. The first loss disconnects this process from Ray."""
        if self.went is None:
            self._went = f"{cause}"
            if self.address is not None:
                _gone[self.address] = self._went
            leave_lost(self._ray, self.address)
        message = (
            f"worker '{worker}': the Ray cluster at {self.address} went away mid-step "
            f"({self.went}); no replica is left to run the step"
        )
        _log.error("%s", message, extra={"worker": worker})
        return ClusterLost(message)

    def check(self, worker: str, during: BaseException | None = None) -> None:
        """Raise ``ClusterLost`` if the pool's cluster is known to be gone: the error of a
        step that raised ``during`` (a Ray shut down under it, say) then, unless that was
        a cancellation, raised as it is."""
        if self.went is None:
            return
        if during is not None and not isinstance(during, Exception):
            raise during
        raise self.lost(worker, WorkerLost(self.went)) from during
