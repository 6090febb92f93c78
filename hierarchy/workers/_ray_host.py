"""The inside of one Ray replica: it builds the worker, then runs steps sent as bytes.

This module runs in the Ray process. It is importable without ``ray`` (the
planner's side wraps :class:`StepHost` with ``ray.remote``), and everything it
is given pickles: the worker's build (an import path or a picklable function),
the team's prompts, and where to export spans.
"""

from __future__ import annotations

import importlib
import logging
import os
from collections.abc import AsyncIterator, Callable
from typing import cast

import anyio
from opentelemetry import context as otel_context

from regiment.errors import ConfigError
from regiment.hierarchy._messages import StepReport
from regiment.hierarchy._model_call import ModelCaller
from regiment.hierarchy._prompts import Prompts
from regiment.hierarchy.workers._journal_calls import StepCalls
from regiment.hierarchy.workers._loop import StepProgress, run_tool_loop
from regiment.hierarchy.workers._placement import WorkerBuild
from regiment.hierarchy.workers._ray_channel import (
    ReplicaApprovals,
    ReplicaChannel,
    ReplicaLog,
    replica_live,
)
from regiment.hierarchy.workers._wire import RemoteStep, decode_step
from regiment.hierarchy.workers._worker import Worker
from regiment.telemetry import Telemetry, TracingHandle, configure_tracing, extract_context

__all__ = ("StepHost", "build_worker")

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


class StepHost:
    """A Ray async actor's state: one worker, its tools and model, its running steps."""

    def __init__(
        self, build: WorkerBuild | Worker, prompts: Prompts, otlp_endpoint: str | None
    ) -> None:
        self._worker = build_worker(build)
        self._prompts = prompts
        self._tracing: TracingHandle | None = None
        endpoint = otlp_endpoint or os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT")
        if endpoint:
            self._tracing = configure_tracing(
                f"regiment-ray:{self._worker.name}", endpoint=endpoint, set_global=False
            )
        self._telemetry = Telemetry(None if self._tracing is None else self._tracing.provider)
        self._caller = ModelCaller(self._worker.model, self._worker.name, self._telemetry)
        self._scopes: dict[str, anyio.CancelScope] = {}
        self._channels: dict[str, ReplicaChannel] = {}  # the running steps' channels, by key

    async def ready(self) -> int:
        """The replica's process id, once it has built its worker."""
        return os.getpid()

    async def step(self, payload: bytes) -> AsyncIterator[bytes]:
        """Run one step (a Ray streaming generator): its records, live events and
        approval asks as they happen, its report last. Cancelled by ``ray.cancel``
        or :meth:`cancel`; :meth:`ack` answers what it waits for."""
        remote = decode_step(payload)
        channel = ReplicaChannel()
        self._channels[remote.key] = channel
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(self._run_step, remote, channel)
                async for message in channel.outgoing:
                    yield channel.batch(message)
        finally:
            self._channels.pop(remote.key, None)

    async def _run_step(self, remote: RemoteStep, channel: ReplicaChannel) -> None:
        assign, worker = remote.assign, self._worker
        progress = StepProgress()
        report: StepReport | None = None
        scope = anyio.CancelScope()
        self._scopes[remote.key] = scope
        # The replica's spans (model calls, tool calls) are children of the planner
        # side's invoke_agent span, so the run stays one trace.
        token = otel_context.attach(extract_context(remote.headers))
        try:
            with scope:
                report = await run_tool_loop(
                    worker=worker.name,
                    description=worker.description,
                    system_prompt=worker.system_prompt,
                    max_iterations=worker.max_iterations,
                    toolset=worker.toolset,
                    caller=self._caller,
                    telemetry=self._telemetry,
                    prompts=self._prompts,
                    assign=assign,
                    progress=progress,
                    on_tool_error=worker.on_tool_error,
                    approvals=ReplicaApprovals(channel),
                    journaled=StepCalls(
                        ReplicaLog(channel, remote),
                        assign,
                        worker.name,
                        replica_live(channel, remote, worker.name),
                    ),
                )
        except Exception as exc:  # as the in-process step actor: the step failed, not the replica
            report = progress.report(
                assign, worker.name, "failed", error=f"{type(exc).__name__}: {exc}"
            )
        finally:
            otel_context.detach(token)
            self._scopes.pop(remote.key, None)
        if report is None:
            report = progress.report(
                assign, worker.name, "cancelled", error="cancelled by the planner"
            )
        channel.finish(report)

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
        """Cancel the step with this key, if it is running here."""
        scope = self._scopes.get(key)
        if scope is not None:
            scope.cancel()
        return scope is not None

    async def flush(self) -> None:
        """Export the spans this replica still holds (before the team stops it)."""
        if self._tracing is not None:
            tracing = self._tracing
            await anyio.to_thread.run_sync(tracing.force_flush)
