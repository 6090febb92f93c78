"""The planner's side of Ray-placed workers: joining Ray, starting the replicas (one
set per pool, hosting each of the pool's workers), sending them steps, cancelling them,
and retrying a step whose replica died (its calls in flight charged: ``charge_lost``).

``ray`` is imported here only inside functions, when a team with a Ray-placed
worker starts; ``import regiment`` never loads it.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any, final

import anyio

from regiment.errors import ConfigError, WorkerLost
from regiment.hierarchy._messages import AssignStep, StepReport
from regiment.hierarchy._prompts import Prompts
from regiment.hierarchy.guard._types import Guardrail
from regiment.hierarchy.workers._live import LiveWorker
from regiment.hierarchy.workers._placement import Ray, by_pool, not_started
from regiment.hierarchy.workers._ray_actor import RayWorkerActor, RunLinks
from regiment.hierarchy.workers._ray_cancel import CutEnds, cut_remotely
from regiment.hierarchy.workers._ray_cluster import ClusterProbe
from regiment.hierarchy.workers._ray_conduit import StepConduit
from regiment.hierarchy.workers._ray_host import HostedWorker, StepHost
from regiment.hierarchy.workers._ray_join import import_ray, join_ray, require_asyncio
from regiment.hierarchy.workers._ray_logs import (
    LogReader,
    follow_logs,
    take_logs,
    wanted_levels,
)
from regiment.hierarchy.workers._ray_mcp import PlacedTools, ReplicaServers
from regiment.hierarchy.workers._ray_recipe import hosted_worker
from regiment.hierarchy.workers._ray_replica import replica_back, start_error
from regiment.hierarchy.workers._ray_stop import stop_replicas
from regiment.hierarchy.workers._ray_version import caller_stamp, checked_host
from regiment.hierarchy.workers._step_actor import StepActor
from regiment.hierarchy.workers._wire import step_key
from regiment.hierarchy.workers._worker import Worker, WorkerSpec
from regiment.models import ModelSettings
from regiment.telemetry import Telemetry

__all__ = ("RayReplicas", "RayWorkerActor", "RunLinks", "start_ray_workers")

_log = logging.getLogger("regiment.ray")
_CONTROL = "control"  # the replicas' concurrency group for acks
_MCP_STOP_WAIT = 10.0  # seconds the replicas have to stop their MCP servers (4 s each at most)


async def start_ray_workers(
    workers: Sequence[Worker],
    prompts: Prompts,
    telemetry: Telemetry,
    settings: ModelSettings | None = None,
    team_guardrails: Sequence[Guardrail] = (),
    links: Mapping[str, RunLinks] | None = None,
) -> dict[str, tuple[WorkerSpec, Callable[[], StepActor]]]:
    """Join Ray, start the replicas of the Ray-placed ``workers`` (one set per pool:
    the workers of a named pool share theirs) and their MCP servers, and return, by
    worker name, how the planner sees it (with the tools its replicas' MCP servers
    listed) and the factory of the actor that hands its steps to them (the team
    spawns it like any worker actor).

    Args:
        workers: the team's Ray-placed workers (their pools' settings already agree).
        prompts: the team's prompts.
        telemetry: the team's.
        settings: the team's model settings (each worker's own win key by key).
        team_guardrails: the team's guards, run before each worker's own.
        links: by worker name, the team's ways to a step's run (as for an in-process
            worker: the replicas' calls are journaled, streamed and approved through them).

    Raises:
        ConfigError: not under asyncio, ray is not installed, a worker cannot be
            built on a replica, its guardrails do not pickle, replicas or their MCP
            servers could not start.
    """
    if not workers:
        return {}
    require_asyncio(workers[0].name)
    pools = by_pool(workers)
    ray = import_ray()
    hosted = {
        w.name: hosted_worker(ray, w, p, prompts, settings, team_guardrails)
        for members in pools.values()
        for w, p in members
    }
    placed: dict[str, tuple[WorkerSpec, Callable[[], StepActor]]] = {}
    started: list[RayReplicas] = []
    content = (telemetry.recorder.capture, telemetry.recorder.limit)  # the replicas follow it
    try:
        for members in pools.values():
            placement = members[0][1]
            await join_ray(ray, placement.address)
            on = [w for w, _ in members]
            replicas = await RayReplicas.start(ray, on, placement, hosted, content)
            started.append(replicas)
            for worker, _ in members:
                tools = PlacedTools(worker, replicas.mcp)
                spec = LiveWorker(worker, tools) if worker.name in replicas.mcp.tools else worker
                make = functools.partial(
                    RayWorkerActor, worker, telemetry, replicas, (links or {}).get(worker.name)
                )
                placed[worker.name] = (spec, functools.partial(make, tools=tools))
    except BaseException:
        for replicas in started:
            replicas.kill()
        raise
    return placed


@final
class RayReplicas:
    """A pool's Ray actors: steps go to them in turn; a lost step is retried once.
    The pool's workers share them; the last one to stop ends them."""

    def __init__(
        self, ray: Any, name: str, handles: Sequence[Any], start_timeout: float = 120.0
    ) -> None:
        self._ray = ray
        self.name = name  # the pool's, or its one worker's
        self._handles = list(handles)
        self._start_timeout = start_timeout  # also how long a restarting one is waited for
        self._turn = itertools.count()
        self._users = 0
        # Replicas lost (a step's, or their log reader's call died) that have not answered
        # since: a step's first try goes to another, keeping its retry for a later loss.
        self._down: set[int] = set()
        self._restarted: set[int] = set()  # of those, killed by us for Ray to restart
        self._following = False  # one of the pool's worker actors reads its replicas' logs
        # its workers' MCP servers (a restarted replica has start_timeout to come back)
        unavailable = ray.exceptions.ActorUnavailableError
        self.mcp = ReplicaServers(handles, "on its Ray replica", unavailable, start_timeout)
        self.cluster = ClusterProbe(ray)  # whether a lost step lost the whole cluster

    @classmethod
    async def start(
        cls,
        ray: Any,
        workers: Sequence[Worker],
        placement: Ray,
        hosted: Mapping[str, HostedWorker],
        content: tuple[bool, int],
    ) -> RayReplicas:
        """Start ``placement.replicas`` replicas, each hosting every one of ``workers`` (their
        ``hosted`` forms by name; ``content``: the team's capture flag and limit, for them)."""
        names = ", ".join(f"'{w.name}'" for w in workers)
        label = placement.pool if placement.pool is not None else workers[0].name
        options = {
            "num_cpus": placement.num_cpus,
            "num_gpus": placement.num_gpus,
            "resources": dict(placement.resources),
            "max_restarts": placement.max_restarts,
            "max_task_retries": 0,  # the planner retries, with the same step key
            # every hosted worker's steps, plus room for the MCP servers' call (held while
            # the replica runs), and for cancel and flush calls meanwhile
            "max_concurrency": sum(w.max_concurrent_steps for w in workers) + 3,
        }
        # Acks have their own group: steps awaiting acks may fill the default one.
        # (and the call that tells the caller of records kept between steps: held)
        # (each replica checks first that it runs the caller's regiment: _ray_version)
        checked = checked_host(ray, StepHost)
        host = ray.remote(concurrency_groups={_CONTROL: 5})(checked).options(**options)
        # Pickled here, unpickled once the replica logs for the caller: what importing
        # a build's module logs there reaches this process too.
        packed = ray.cloudpickle.dumps([hosted[w.name] for w in workers])
        given = (tuple(caller_stamp()), packed, label, placement.otlp_endpoint, content)
        handles = [host.remote(*given, wanted_levels()) for _ in range(placement.replicas)]
        replicas = cls(ray, label, handles, placement.start_timeout)
        where = f"worker {names}" if len(workers) == 1 else f"Ray pool '{label}' ({names})"
        try:
            with anyio.fail_after(placement.start_timeout):
                for handle in handles:
                    await handle.ready.remote()
        except TimeoutError:
            replicas.kill()
            raise ConfigError(f"{where}: {not_started(placement)}") from None
        except Exception as exc:
            replicas.kill()
            raise ConfigError(
                f"{where}: its Ray replicas did not start: {start_error(exc)}"
            ) from exc
        except BaseException:  # cancelled while they start: none of them is left running
            replicas.kill()
            raise
        try:
            await replicas.mcp.start()
            await take_logs(handles, _CONTROL, label)  # what building the workers logged
        except BaseException:
            with anyio.CancelScope(shield=True):
                await take_logs(handles, _CONTROL, label)  # why a server did not start
            await replicas.mcp.stop(_MCP_STOP_WAIT)
            replicas.kill()
            raise
        return replicas

    @property
    def count(self) -> int:
        return len(self._handles)

    def acquire(self) -> None:
        """One more worker actor hands steps to these replicas."""
        self._users += 1

    async def run(
        self,
        worker: str,
        assign: AssignStep,
        headers: dict[str, str],
        conduit: StepConduit,
        ends: CutEnds,
    ) -> StepReport:
        """Run ``worker``'s step on the next replica; on ``WorkerLost``, unless the whole
        cluster is gone, once more on another, with what the first attempt journaled.
        Cut, the step has ``ends.grace`` seconds (its worker's ``cancel_grace``) to end on
        its replica, which is restarted if it does not (``end_cut``, in a task ``ends``
        starts: the cut itself returns at once).

        Raises:
            WorkerLost: the replicas running the step died both times.
            ClusterLost: the Ray cluster itself is gone: no retry, nor replan, can help.
        """
        self.cluster.check(worker)  # gone already: no replica to try
        key, first = step_key(assign), self._live_from(next(self._turn))
        if first in self._down:  # as all are: wait for it to be back, keeping the retry
            down = WorkerLost(f"worker '{worker}': every one of its Ray replicas was lost")
            back = (self._ray, self._handles[first], self._start_timeout, _CONTROL, down)
            await self.cluster.watched(functools.partial(replica_back, *back), worker)
        try:
            return await self._step_on(first, worker, conduit, (key, ends), headers)
        except WorkerLost as lost:
            self._lost(first)
            if await self.cluster.gone():
                raise self.cluster.lost(worker, lost) from lost
            extra = {"run_id": assign.run_id, "step_id": assign.step.id, "worker": worker}
            first_loss, one = lost, len(self._handles) == 1
            retry = "%s %s: %s; retrying once on %s"
            on = "it, once Ray has restarted it" if one else "another replica"
            _log.warning(retry, worker, assign.step.id, lost, on, extra=extra)
        other = self._live_from(first + 1, first)
        try:  # the only replica, or both died: wait for the one Ray restarts
            back = (self._ray, self._handles[other], self._start_timeout, _CONTROL, first_loss)
            await self.cluster.watched(functools.partial(replica_back, *back), worker)
            return await self._step_on(other, worker, conduit, (key, ends), headers)
        except WorkerLost as lost:
            self._lost(other)
            if await self.cluster.gone():
                raise self.cluster.lost(worker, lost) from lost
            raise

    async def _step_on(
        self,
        index: int,
        worker: str,
        conduit: StepConduit,
        step: tuple[str, CutEnds],
        headers: dict[str, str],
    ) -> StepReport:
        await self.mcp.revive(index, worker)  # its MCP servers, if Ray restarted it
        conduit.replica = index
        report = await self._call(index, conduit, step, headers)
        self._down.discard(index)  # it answers
        self._restarted.discard(index)
        await self.mcp.refresh(index, conduit.tools_version)  # a server changed its tools
        return report

    def _lost(self, index: int, killed: bool = False) -> None:
        """Replica ``index`` died, or is ``killed`` for Ray to restart (a cut step would not
        end: not news if it is not back as the team stops, ``stop_replicas``)."""
        self.mcp.lost(index)  # its MCP servers start again once it is back
        self._down.add(index)  # first tries go to the others meanwhile
        if killed:
            self._restarted.add(index)

    def _live_from(self, start: int, avoid: int = -1) -> int:
        """The first replica from ``start`` on, in turn, not known to be down (nor
        ``avoid``); if there is none, ``start``'s own."""
        count = len(self._handles)
        for index in ((start + k) % count for k in range(count)):
            if index != avoid and index not in self._down:
                return index
        return start % count

    def _seen(self, index: int, up: bool) -> None:
        """The log reader found replica ``index`` lost (``up`` false), or answering again."""
        if up:
            self._down.discard(index)
            self._restarted.discard(index)
        else:
            self._down.add(index)

    def _gone(self) -> bool:
        return self.cluster.went is not None

    async def follow_logs(self) -> None:
        """Log the records the replicas make between steps here as they make them, until
        cancelled; run by each of the pool's worker actors, done by the first."""
        if self._following or self.cluster.went is not None:
            return
        self._following = True
        try:
            reader = LogReader(_CONTROL, self.name, self._start_timeout, self._seen, self._gone)
            await follow_logs(self._ray, self._handles, reader)
        finally:
            self._following = False

    async def _call(
        self,
        index: int,
        conduit: StepConduit,
        step: tuple[str, CutEnds],
        headers: dict[str, str],
    ) -> StepReport:
        """The step (``step``: its key, and how it ends once cut) on replica ``index``:
        its report."""
        worker, handle, (key, ends) = conduit.worker, self._handles[index], step
        stream = handle.step.remote(conduit.payload(key, headers))
        try:
            drain = functools.partial(conduit.drain, stream, functools.partial(_ack, handle, key))
            report = await self.cluster.watched(drain, worker)
        except self._ray.exceptions.RayActorError as exc:
            conduit.replica_lost()  # its model calls in flight: billed all the same
            raise WorkerLost(
                f"worker '{worker}': its Ray replica died mid-step "
                f"({type(exc).__name__}); Ray restarts it up to Ray(max_restarts=...) times"
            ) from exc
        except WorkerLost:  # the cluster answers no more: nothing to cancel there
            conduit.replica_lost()
            raise
        except BaseException as exc:
            conduit.step_cut()  # its model calls in flight: billed all the same
            self.cluster.check(worker, exc)  # gone (another pool found out): no one to ask
            # Cancelled (the run, a replan, the step timeout), or the journal failed: the
            # remote step is cancelled too; the worker waits for its end there, not the run.
            killed = functools.partial(self._lost, killed=True)
            cut_remotely(self._ray, (stream, handle), (worker, key, index), ends, killed)
            raise
        if report is None:
            raise WorkerLost(f"worker '{worker}': its Ray replica ended a step without a report")
        return report

    def pack(self, deps: object) -> bytes:
        """``deps`` pickled for the replicas (Ray's cloudpickle)."""
        data: bytes = self._ray.cloudpickle.dumps(deps)
        return data

    async def release(self) -> None:
        """A worker actor stopped; the last one stops the replicas' MCP servers, takes
        their log records, flushes their spans (those that answer) and ends them."""
        self._users -= 1
        if self._users > 0 or self.cluster.went is not None:  # (gone: nothing answers there)
            return
        where, restarted = (self.name, _CONTROL), self._restarted
        await stop_replicas(self._ray, self._handles, where, self.mcp, self._gone, restarted)
        self.kill()

    def kill(self) -> None:
        if self.cluster.went is not None:  # left Ray: a Ray call would start a new one
            return
        for handle in self._handles:
            with contextlib.suppress(Exception):
                self._ray.kill(handle, no_restart=True)


async def _ack(handle: Any, key: str, seq: int, payload: bytes) -> object:
    return await handle.ack.options(concurrency_group=_CONTROL).remote(key, seq, payload)
