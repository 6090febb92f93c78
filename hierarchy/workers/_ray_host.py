"""The inside of one Ray replica: it builds its workers, then runs steps sent as bytes.

This module runs in the Ray process. It is importable without ``ray`` (the
planner's side wraps :class:`StepHost` with ``ray.remote``), and everything it
is given pickles: each hosted worker's build (an import path or a picklable
function), the team's prompts, the worker's model settings and guardrails as the
team's process resolved them, and where to export spans. A replica of a pool
hosts several workers and routes each step by the worker it names.
"""

from __future__ import annotations

import dataclasses
import importlib
import logging
import os
import pickle
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import cast, final

import anyio
from opentelemetry import context as otel_context

from regiment.errors import ConfigError
from regiment.hierarchy._messages import StepReport
from regiment.hierarchy._model_call import ModelCaller
from regiment.hierarchy._prompts import HookFailed, Prompts
from regiment.hierarchy.guard._step import StepGuards
from regiment.hierarchy.guard._types import Guardrail, as_guardrail
from regiment.hierarchy.workers._failed import failed_report
from regiment.hierarchy.workers._journal_calls import StepCalls
from regiment.hierarchy.workers._loop import StepProgress, run_tool_loop
from regiment.hierarchy.workers._placement import WorkerBuild
from regiment.hierarchy.workers._ray_channel import (
    ReplicaApprovals,
    ReplicaChannel,
    ReplicaLog,
    replica_live,
    replica_top_ups,
)
from regiment.hierarchy.workers._ray_logs import ReplicaLogHandler
from regiment.hierarchy.workers._ray_mcp import MCPStarted, ReplicaMCP
from regiment.hierarchy.workers._wire import RemoteStep, decode_step, encode
from regiment.hierarchy.workers._worker import Worker
from regiment.models import ModelSettings, Price
from regiment.telemetry import (
    Telemetry,
    TracingHandle,
    configure_tracing,
    extract_context,
)

__all__ = ("HostedWorker", "StepHost", "build_worker")

_log = logging.getLogger("regiment.ray")


def build_worker(build: WorkerBuild | Worker) -> Worker:
    """The worker a replica runs: ``build`` called (or imported and called), or the
    pickled worker itself.

    Raises:
        ConfigError: the import path is wrong, or it did not give a ``Worker``.
    """
    if isinstance(build, Worker):
        return build
    if isinstance(build, str):
        module_name, _, attribute = build.partition(":")
        try:
            found: object = getattr(importlib.import_module(module_name), attribute)
        except (ImportError, AttributeError) as exc:
            raise ConfigError(
                f"Ray(build={build!r}) cannot be imported on the Ray node ({exc}); "
                "make the module importable there (installed, or on PYTHONPATH)"
            ) from exc
        if not callable(found):
            raise ConfigError(f"Ray(build={build!r}) is not a function of no arguments")
        build = cast("Callable[[], Worker]", found)
    worker = build()
    if not isinstance(worker, Worker):
        raise ConfigError(
            f"Ray build {build!r} returned {type(worker).__name__}; it must return a Worker"
        )
    return worker


@final
@dataclass(frozen=True, kw_only=True)
class HostedWorker:
    """One worker a replica hosts, as the team's process sends it (pickled, once).

    Attributes:
        name: the worker's name; steps name it, and the build must give a worker of it.
        build: how the replica makes the worker (its model, tools and instructions).
        prompts: its team's prompts.
        settings: its model calls' settings: the team's under the worker's own,
            merged in the team's process as an in-process worker merges them.
        guardrails: the team's step guards, then the worker's own: pickled, or (a team
            file's) the ``"module:attribute"`` path the replica imports it from.
        tool_guardrails: the worker's guards of one tool, by tool name (as ``guardrails``).
        price: the worker's model's price in the team's process (the one a money budget
            was checked against): the replica charges its calls at it when the model it
            built has no price of its own.
    """

    name: str
    build: WorkerBuild | Worker
    prompts: Prompts
    settings: ModelSettings | None = None
    guardrails: tuple[Guardrail | str, ...] = ()
    tool_guardrails: Mapping[str, tuple[Guardrail | str, ...]] = field(default_factory=dict)
    price: Price | None = None


@final
@dataclass(frozen=True, slots=True)
class _Hosted:
    """A hosted worker as built on the replica."""

    worker: Worker
    prompts: Prompts
    caller: ModelCaller
    guards: StepGuards | None
    system: str  # the worker's system prompt, made once per replica, not once per step


def _guard(shipped: Guardrail | str) -> Guardrail:
    """A guard as the team's process sent it: itself, or imported from its path."""
    if isinstance(shipped, Guardrail):
        return shipped
    module_name, _, attribute = shipped.partition(":")
    try:
        found: object = importlib.import_module(module_name)
        for part in attribute.split("."):
            found = getattr(found, part)
    except (ImportError, AttributeError) as exc:
        raise ConfigError(
            f"guardrail {shipped!r} cannot be imported on the Ray node ({exc}); make the "
            "module importable there (installed, or on PYTHONPATH)"
        ) from exc
    return dataclasses.replace(as_guardrail(found, f"{shipped}: "), source=shipped)


def _unpickled(data: bytes) -> Sequence[HostedWorker]:
    """The hosted workers the caller pickled (their builds' modules imported here)."""
    try:
        hosted: Sequence[HostedWorker] = pickle.loads(data)
    except Exception as exc:  # a module of the build, its tools or guards is not here
        raise ConfigError(
            f"the workers' Ray(build=...) cannot be loaded on the Ray node "
            f"({type(exc).__name__}: {exc}); make its modules importable there (installed, "
            "or on the Ray node's PYTHONPATH)"
        ) from exc
    return hosted


class StepHost:
    """A Ray async actor's state: its workers (their tools, models and guards), its
    running steps."""

    def __init__(
        self,
        hosted: Sequence[HostedWorker] | bytes,
        name: str,
        otlp_endpoint: str | None,
        content: tuple[bool, int] | None = None,
        log_levels: dict[str, int] | None = None,
    ) -> None:
        # First: what building the workers logs (a tool module's import, say) is kept
        # for the caller, at the levels it logs (``log_levels``).
        self._logs = ReplicaLogHandler.install(log_levels or {})
        if isinstance(hosted, bytes):
            hosted = _unpickled(hosted)
        self._tracing: TracingHandle | None = None
        endpoint = otlp_endpoint or os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT")
        if endpoint:
            self._tracing = configure_tracing(
                f"regiment-ray:{name}", endpoint=endpoint, set_global=False
            )
        tracing = self._tracing
        # The replica's model calls are metered here, where they are made, next to their
        # spans; they capture content as the team's process does (``content``: its capture
        # flag and limit), not as the replica's own environment would say.
        capture, limit = (None, 4096) if content is None else content
        self._telemetry = Telemetry(
            None if tracing is None else tracing.provider,
            capture_content=capture,
            content_limit=limit,
            meter_provider=None if tracing is None else tracing.meter_provider,
        )
        self._hosted = {spec.name: self._build(spec) for spec in hosted}
        workers = {name: h.worker for name, h in self._hosted.items()}
        self._mcp = ReplicaMCP(workers, self._telemetry.tracer)
        # The running steps, by key: their cancel scope, and an event set once they end.
        self._running: dict[str, tuple[anyio.CancelScope, anyio.Event, StepProgress]] = {}
        self._channels: dict[str, ReplicaChannel] = {}  # the running steps' channels, by key

    def _build(self, spec: HostedWorker) -> _Hosted:
        worker = build_worker(spec.build)
        if worker.name != spec.name:
            raise ConfigError(
                f"the Ray build of worker '{spec.name}' made a worker named '{worker.name}'; "
                "make it build the worker of that name"
            )
        telemetry = self._telemetry
        caller = ModelCaller(worker.model, worker.name, telemetry, spec.settings, price=spec.price)
        guards = StepGuards.build(
            worker.name,
            tuple(_guard(g) for g in spec.guardrails),
            {tool: tuple(_guard(g) for g in given) for tool, given in spec.tool_guardrails.items()},
            telemetry,
        )
        try:
            system = spec.prompts.worker_system(
                worker=worker.name,
                description=worker.description,
                system_prompt=worker.system_prompt,
            )
        except HookFailed as exc:  # Team.start() fails naming the hook, as in-process
            raise ConfigError(f"worker {worker.name!r} cannot start: {exc}") from exc.__cause__
        return _Hosted(worker, spec.prompts, caller, guards, system)

    def _hosting(self, name: str) -> _Hosted:
        if not name and len(self._hosted) == 1:  # a step that names no worker: the only one
            return next(iter(self._hosted.values()))
        hosted = self._hosted.get(name)
        if hosted is None:
            here = ", ".join(sorted(self._hosted))
            raise ConfigError(f"this Ray replica hosts no worker '{name}'; it hosts: {here}")
        return hosted

    async def ready(self) -> int:
        """The replica's process id, once it has built its worker."""
        return os.getpid()

    async def mcp_serve(self) -> None:
        """Start the hosted workers' MCP servers and hold them until :meth:`mcp_stop`."""
        await self._mcp.serve()

    async def mcp_started(self) -> MCPStarted:
        """What :meth:`mcp_serve` started (their tools), or why it did not, once it has."""
        return await self._mcp.started()

    async def mcp_serving(self) -> bool:
        """Whether the MCP servers are up (or there are none): not after Ray restarted it."""
        return self._mcp.serving

    async def mcp_tools(self) -> MCPStarted:
        """The MCP servers' tools as they are now (after a server changed its list)."""
        return self._mcp.now()

    async def mcp_stop(self) -> None:
        """Close the MCP sessions and stop the servers; return once they have stopped."""
        await self._mcp.stop()

    async def step(self, payload: bytes) -> AsyncIterator[bytes]:
        """Run one step (a Ray streaming generator): its records, live events and
        approval asks as they happen, its report last. Cancelled by ``ray.cancel``
        or :meth:`cancel`; :meth:`ack` answers what it waits for."""
        remote = decode_step(payload)
        if not self._mcp.serving:  # Ray restarted this replica: the caller starts them first
            return
        channel = ReplicaChannel()
        self._channels[remote.key] = channel
        for kept in self._logs.take():  # made outside a step since the caller last took them
            channel.tell(kept)
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(self._run_step, remote, channel)
                async for message in channel.outgoing:
                    yield channel.batch(message)
        finally:
            self._channels.pop(remote.key, None)

    async def _run_step(self, remote: RemoteStep, channel: ReplicaChannel) -> None:
        hosted = self._hosting(remote.worker)
        assign, worker = remote.assign, hosted.worker
        report: StepReport | None = None
        scope, ended = anyio.CancelScope(), anyio.Event()
        progress = StepProgress()
        progress.ask_more = replica_top_ups(channel)
        # The loop reads ``traced``; asked here, a global provider installed in this
        # process after the replica started is seen from its next step on.
        _ = self._telemetry.tracing
        self._running[remote.key] = (scope, ended, progress)
        # The replica's spans (model calls, tool calls) are children of the planner
        # side's invoke_agent span, so the run stays one trace.
        token = otel_context.attach(extract_context(remote.headers))
        logs = ReplicaLogHandler.step(channel, remote.log_levels)  # back to the caller
        log = ReplicaLog(channel, remote)  # (its replay says what the step replayed)
        try:
            with scope:
                report = await run_tool_loop(
                    worker=worker.name,
                    system=hosted.system,
                    max_iterations=worker.max_iterations,
                    toolset=self._mcp.toolset(worker),
                    caller=hosted.caller,
                    telemetry=self._telemetry,
                    prompts=hosted.prompts,
                    assign=assign,
                    progress=progress,
                    on_tool_error=worker.on_tool_error,
                    guards=hosted.guards,
                    approvals=ReplicaApprovals(channel),
                    journaled=StepCalls(
                        log,
                        assign,
                        worker.name,
                        replica_live(channel, remote, worker.name),
                    ),
                )
        except Exception as exc:  # as the in-process step actor: the step failed, not the replica
            report = failed_report(progress, assign, worker.name, exc)
        finally:
            otel_context.detach(token)
            ReplicaLogHandler.done(logs)
            self._running.pop(remote.key, None)
            ended.set()  # its tools' own cleanup is done: nothing of it runs any more
        if report is None:
            report = progress.report(
                assign, worker.name, "cancelled", error="cancelled by the planner"
            )
        for kept in self._logs.take():  # made outside a step meanwhile (a tool's own thread)
            channel.tell(kept)
        channel.finish(report, self._mcp.version, log.replay)

    async def ack(self, key: str, seq: int, payload: bytes) -> bool:
        """The caller's answer to message ``seq`` of step ``key`` (``False``: it has ended).

        It runs in the replica's control concurrency group (its own thread), so it
        hands the answer to the step's event loop."""
        channel = self._channels.get(key)
        if channel is None:
            return False
        channel.ack(seq, payload)
        return True

    async def cancel(self, key: str) -> bool:
        """Cancel the step with this key, if it is running here, and return once it has
        ended (its tools' cleanup included), so no work of it goes on after this call."""
        running = self._running.get(key)
        if running is None:
            return False
        scope, ended, progress = running
        progress.stopped = True  # its loop calls the model no more, whatever its tools do
        scope.cancel()
        await ended.wait()
        return True

    async def logs(self) -> bytes:
        """The records made outside a step since the last take (``LogRecorded``s), encoded."""
        return encode(list(self._logs.take()))

    async def log_news(self) -> AsyncIterator[bytes]:
        """A Ray streaming generator the caller holds while its team is started: an
        empty item each time records made outside a step are kept, which the caller
        then takes (:meth:`logs`); it runs until cancelled."""
        fresh = True
        while True:
            await self._logs.news(fresh)
            fresh = False
            yield b""

    async def flush(self) -> None:
        """Export the spans this replica still holds (before the team stops it)."""
        if self._tracing is not None:
            tracing = self._tracing
            await anyio.to_thread.run_sync(tracing.force_flush)
