"""The planner's side of Ray-placed workers: joining Ray, starting the replicas (one
set per pool, hosting each of the pool's workers), sending them steps, cancelling
them, and retrying a step whose replica died.

``ray`` is imported here only inside functions, when a team with a Ray-placed
worker starts; ``import regiment`` never loads it.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import itertools
import logging
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any, cast, final

import anyio

from regiment.errors import ConfigError, WorkerLost
from regiment.hierarchy._messages import AssignStep, StepReport
from regiment.hierarchy._prompts import Prompts
from regiment.hierarchy.guard._types import Guardrail, as_guardrail
from regiment.hierarchy.workers._loop import StepProgress
from regiment.hierarchy.workers._placement import Ray, WorkerBuild, pool_of
from regiment.hierarchy.workers._ray_host import HostedWorker, StepHost
from regiment.hierarchy.workers._step_actor import StepActor
from regiment.hierarchy.workers._wire import RemoteStep, decode_report, encode_step, step_key
from regiment.hierarchy.workers._worker import Worker
from regiment.models import ModelSettings
from regiment.telemetry import Telemetry, inject, semconv

__all__ = ("RayReplicas", "RayWorkerActor", "start_ray_workers")

_log = logging.getLogger("regiment.ray")
_STEP_KINDS = frozenset({"model_request", "model_reply", "tool_call", "tool_result"})
_INSTALL = "workers on Ray need the ray extra: pip install 'regiment[ray]'"


def import_ray() -> ModuleType:
    """``ray``, or a ``ConfigError`` with the install line."""
    try:
        import ray
    except ImportError as exc:
        raise ConfigError(_INSTALL) from exc
    return ray


async def start_ray_workers(
    workers: Sequence[Worker],
    prompts: Prompts,
    telemetry: Telemetry,
    settings: ModelSettings | None = None,
    team_guardrails: Sequence[Guardrail] = (),
) -> dict[str, Callable[[], StepActor]]:
    """Join Ray, start the replicas of the Ray-placed ``workers`` (one set per pool:
    the workers of a named pool share theirs), and return, by worker name, the
    factory of the actor that hands its steps to them (the team spawns it like any
    worker actor).

    Args:
        workers: the team's Ray-placed workers (their pools' settings already agree).
        prompts: the team's prompts.
        telemetry: the team's.
        settings: the team's model settings (each worker's own win key by key).
        team_guardrails: the team's guards, run before each worker's own.

    Raises:
        ConfigError: not under asyncio, ray is not installed, a worker cannot be
            built on a replica, its guardrails do not pickle, or replicas could not start.
    """
    if not workers:
        return {}
    _require_asyncio(workers[0].name)
    pools = _pools(workers)
    ray = import_ray()
    hosted = {
        w.name: _hosted(ray, w, p, prompts, settings, team_guardrails)
        for members in pools.values()
        for w, p in members
    }
    factories: dict[str, Callable[[], StepActor]] = {}
    started: list[RayReplicas] = []
    try:
        for members in pools.values():
            placement = members[0][1]
            await anyio.to_thread.run_sync(_join, ray, placement.address)
            replicas = await RayReplicas.start(
                ray, [w for w, _ in members], placement, [hosted[w.name] for w, _ in members]
            )
            started.append(replicas)
            for worker, _ in members:
                factories[worker.name] = functools.partial(
                    RayWorkerActor, worker, telemetry, replicas
                )
    except BaseException:
        for replicas in started:
            replicas.kill()
        raise
    return factories


def _pools(workers: Sequence[Worker]) -> dict[str, list[tuple[Worker, Ray]]]:
    """The Ray-placed workers by pool (a worker without one is a pool of its own)."""
    pools: dict[str, list[tuple[Worker, Ray]]] = {}
    for worker in workers:
        placement = worker.placement
        assert placement is not None
        if worker.mcp_servers:
            raise ConfigError(
                f"worker '{worker.name}' has MCP servers and is placed on Ray; MCP servers run "
                "only in the team's process: keep this worker local, or give it plain tools"
            )
        pools.setdefault(pool_of(worker.name, placement), []).append((worker, placement))
    return pools


def _require_asyncio(name: str) -> None:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        raise ConfigError(
            f"worker '{name}' is placed on Ray, and Ray runs only under asyncio: start the "
            "team under asyncio (anyio.run(main) or anyio.run(main, backend='asyncio')), "
            "or remove the worker's placement"
        ) from None


def _hosted(
    ray: ModuleType,
    worker: Worker,
    placement: Ray,
    prompts: Prompts,
    settings: ModelSettings | None,
    team_guardrails: Sequence[Guardrail],
) -> HostedWorker:
    """What a replica hosts ``worker`` from; checked to pickle here, with a message
    that says what to do, rather than deep inside Ray."""
    recipe: object = placement.build
    if recipe is None:
        recipe = dataclasses.replace(worker, tools=worker.toolset, placement=None)
    try:
        ray.cloudpickle.dumps(recipe)
    except Exception as exc:
        raise ConfigError(
            f"worker '{worker.name}' is placed on Ray, but "
            f"{'its Ray(build=...)' if placement.build is not None else 'its model or tools'} "
            f"cannot be pickled for the replicas ({type(exc).__name__}: {exc}); give "
            "Ray(build='module:function') naming a function that builds the Worker on the "
            "Ray node (team-file workers do this for you)"
        ) from exc
    step_guards = (*team_guardrails, *(as_guardrail(g) for g in worker.guardrails))
    guards = tuple(g for g in step_guards if g.kind in _STEP_KINDS)  # not the plan's, answer's
    per_tool = {
        tool: tuple(as_guardrail(g) for g in given)
        for tool, given in worker.tool_guardrails.items()
    }
    return HostedWorker(
        name=worker.name,
        build=cast("WorkerBuild | Worker", recipe),
        prompts=prompts,
        settings=worker.settings if settings is None else settings.merge(worker.settings),
        guardrails=tuple(_shipped(ray, worker.name, g) for g in guards),
        tool_guardrails={
            tool: tuple(_shipped(ray, worker.name, g) for g in given)
            for tool, given in per_tool.items()
        },
    )


def _shipped(ray: ModuleType, worker: str, guard: Guardrail) -> Guardrail | str:
    """How ``guard`` reaches the replicas: a team file's by its import path, any
    other pickled (checked here)."""
    if guard.source:
        return guard.source
    try:
        ray.cloudpickle.dumps(guard)
    except Exception as exc:
        raise ConfigError(
            f"worker '{worker}' is placed on Ray, but its guardrail '{guard.name}' cannot be "
            f"pickled for the replicas ({type(exc).__name__}: {exc}); make the guard a "
            "module-level function or Guardrail and name it in a team file (replicas import "
            "those by path), or build what it holds (a model client) inside its check"
        ) from exc
    return guard


def _join(ray: Any, address: str | None) -> None:
    if ray.is_initialized():
        return  # this process joined a Ray already (its own ray.init): use that one
    # The replicas' output stays in Ray's log files: the caller's stdout may be
    # machine-read (``regiment run --events jsonl``).
    options = {"include_dashboard": False, "log_to_driver": False}
    try:
        if address is not None:
            ray.init(address=address, **options)
            return
        try:
            ray.init(address="auto", **options)  # a running cluster
        except ConnectionError:
            ray.init(**options)  # else a local one, stopped at exit
    except ConnectionError as exc:
        raise ConfigError(
            f"cannot join the Ray cluster at {address!r} ({exc}); check the address, and for "
            "a cluster with token authentication set RAY_AUTH_MODE=token and its token "
            "(RAY_AUTH_TOKEN or ~/.ray/auth_token)"
        ) from exc


@final
class RayReplicas:
    """A pool's Ray actors: steps go to them in turn; a lost step is retried once.
    The pool's workers share them; the last one to stop ends them."""

    def __init__(self, ray: Any, name: str, handles: Sequence[Any]) -> None:
        self._ray = ray
        self.name = name  # the pool's, or its one worker's
        self._handles = list(handles)
        self._turn = itertools.count()
        self._users = 0

    @classmethod
    async def start(
        cls, ray: Any, workers: Sequence[Worker], placement: Ray, hosted: Sequence[HostedWorker]
    ) -> RayReplicas:
        """Start ``placement.replicas`` replicas, each hosting every one of ``workers``."""
        names = ", ".join(f"'{w.name}'" for w in workers)
        label = placement.pool if placement.pool is not None else workers[0].name
        options = {
            "num_cpus": placement.num_cpus,
            "num_gpus": placement.num_gpus,
            "resources": dict(placement.resources),
            "max_restarts": placement.max_restarts,
            "max_task_retries": 0,  # the planner retries, with the same step key
            # every hosted worker's steps, plus room for cancel and flush calls meanwhile
            "max_concurrency": sum(w.max_concurrent_steps for w in workers) + 2,
        }
        host = ray.remote(StepHost).options(**options)
        handles = [
            host.remote(list(hosted), label, placement.otlp_endpoint)
            for _ in range(placement.replicas)
        ]
        replicas = cls(ray, label, handles)
        try:
            for handle in handles:
                await handle.ready.remote()
        except Exception as exc:
            replicas.kill()
            where = f"worker {names}" if len(workers) == 1 else f"Ray pool '{label}' ({names})"
            raise ConfigError(f"{where}: its Ray replicas did not start: {exc}") from exc
        return replicas

    @property
    def count(self) -> int:
        return len(self._handles)

    def acquire(self) -> None:
        """One more worker actor hands steps to these replicas."""
        self._users += 1

    async def run(self, worker: str, assign: AssignStep, headers: dict[str, str]) -> StepReport:
        """Run ``worker``'s step on the next replica; on ``WorkerLost``, once more on another.

        Raises:
            WorkerLost: the replicas running the step died both times.
        """
        key = step_key(assign)
        payload = encode_step(RemoteStep(assign=assign, headers=headers, key=key, worker=worker))
        first = next(self._turn) % len(self._handles)
        try:
            return await self._call(self._handles[first], payload, key, worker)
        except WorkerLost as lost:
            _log.warning(
                "%s %s: %s; retrying once on another replica",
                worker,
                assign.step.id,
                lost,
                extra={"run_id": assign.run_id, "step_id": assign.step.id, "worker": worker},
            )
        other = self._handles[(first + 1) % len(self._handles)]
        return await self._call(other, payload, key, worker)

    async def _call(self, handle: Any, payload: bytes, key: str, worker: str) -> StepReport:
        ref = handle.step.remote(payload)
        try:
            data = await ref
        except self._ray.exceptions.RayActorError as exc:
            raise WorkerLost(
                f"worker '{worker}': its Ray replica died mid-step "
                f"({type(exc).__name__}); Ray restarts it up to Ray(max_restarts=...) times"
            ) from exc
        except BaseException:
            # Cancelled (the run, a replan, the step timeout): stop the remote step too.
            self._ray.cancel(ref)
            handle.cancel.remote(key)
            raise
        return decode_report(data)

    async def release(self) -> None:
        """A worker actor stopped; the last one flushes the replicas' spans and ends them."""
        self._users -= 1
        if self._users > 0:
            return
        with anyio.CancelScope(shield=True), anyio.move_on_after(5.0):
            for handle in self._handles:
                with contextlib.suppress(Exception):
                    await handle.flush.remote()
        self.kill()

    def kill(self) -> None:
        for handle in self._handles:
            with contextlib.suppress(Exception):
                self._ray.kill(handle, no_restart=True)


class RayWorkerActor(StepActor):
    """Hands a Ray-placed worker's steps to its replicas; the step bookkeeping
    (queueing, cancel scopes, timeouts, one report per step) is the shared one."""

    def __init__(self, worker: Worker, telemetry: Telemetry, replicas: RayReplicas) -> None:
        super().__init__(
            worker.name,
            telemetry,
            max_concurrent=worker.max_concurrent_steps * replicas.count,
            step_timeout=worker.step_timeout,
            span_attributes={
                semconv.GEN_AI_PROVIDER_NAME: worker.model.provider,
                semconv.GEN_AI_AGENT_DESCRIPTION: worker.description,
            },
        )
        self._replicas = replicas
        replicas.acquire()

    async def work(self, assign: AssignStep, progress: StepProgress) -> StepReport:
        """Run the step on a replica, under this step's ``invoke_agent`` span."""
        report = await self._replicas.run(self._name, assign, inject())
        progress.usage, progress.model_calls = report.usage, report.model_calls
        progress.tool_calls = report.tool_calls
        return report

    async def on_stop(self) -> None:
        await super().on_stop()
        await self._replicas.release()
