"""A team: one planner and its workers, started inside the caller's event loop.

``async with team.start() as running:`` spawns the team's actors in an actor
system owned by that block; ``await running.run(goal)`` and
``running.stream(goal)`` can be used by many tasks at once. Each run gets its
own planner actor (a child of the team's supervisor), so one run's failure or
cancellation never touches another's.
"""

from __future__ import annotations

import functools
import itertools
import uuid
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import assert_never, final

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream
from opentelemetry.trace import Span

from regiment.actors import (
    Actor,
    ActorRef,
    ActorSystem,
    ChildFailed,
    RestartPolicy,
    open_actor_system,
)
from regiment.errors import ConfigError, RunCancelled, RunError
from regiment.hierarchy._budget import Budget
from regiment.hierarchy._checks import Check
from regiment.hierarchy._critic import Critic
from regiment.hierarchy._events import Event, RunCompleted, RunFailed
from regiment.hierarchy._memory import Compression
from regiment.hierarchy._messages import WorkerMessage
from regiment.hierarchy._planner import Planner
from regiment.hierarchy._result import RunResult
from regiment.hierarchy._run import RunActor, TeamRuntime
from regiment.hierarchy._run_messages import CancelRun, PlannerMessage, StartRun
from regiment.hierarchy._run_state import RunChannel
from regiment.hierarchy._worker import Worker, WorkerActor
from regiment.telemetry import Telemetry, record_run_end

__all__ = ("RunningTeam", "Team")

# How long a cancelled run may take to collect its steps' cancelled reports.
_CANCEL_GRACE = 5.0


@final
@dataclass(frozen=True, kw_only=True)
class Team:
    """One planner and its workers.

    Attributes:
        name: the team's name (the root span is ``invoke_agent {name}``).
        planner: how the team plans and synthesises.
        workers: the specialists steps are assigned to.
        checks: named predicates a plan step may carry.
        budget: limits per run.
        concurrency: steps of one run in flight at once.
        critic: judges each round's result; ``None`` means one round, no critique.
        compression: compresses the carried context when it grows; ``None`` never does.
        telemetry: where spans go; ``None`` uses the global tracer provider
            (which records nothing until the application installs one).
    """

    name: str
    planner: Planner
    workers: Sequence[Worker]
    checks: Mapping[str, Check] = field(default_factory=dict)
    budget: Budget = field(default_factory=Budget)
    concurrency: int = 8
    critic: Critic | None = None
    compression: Compression | None = None
    telemetry: Telemetry | None = None

    def __post_init__(self) -> None:
        names = [w.name for w in self.workers]
        if not names:
            raise ConfigError(f"team '{self.name}' has no workers; give it at least one Worker")
        if len(set(names)) != len(names):
            dupes = sorted({n for n in names if names.count(n) > 1})
            raise ConfigError(
                f"team '{self.name}' has two workers named {', '.join(dupes)}; worker names must be unique"
            )
        if self.concurrency < 1:
            raise ConfigError(f"team '{self.name}': concurrency must be at least 1")

    @asynccontextmanager
    async def start(self) -> AsyncIterator[RunningTeam]:
        """Spawn the team's actors in the current event loop; stop them on exit."""
        async with open_actor_system() as system:
            yield await RunningTeam.spawn(self, system)

    async def run(self, goal: str) -> RunResult:
        """Start the team, run one goal, stop the team (the one-call form for scripts)."""
        async with self.start() as running:
            return await running.run(goal)


@dataclass(frozen=True, slots=True)
class _SpawnRun:
    run_id: str
    goal: str
    channel: RunChannel
    run_span: Span


_RunRef = ActorRef[PlannerMessage, None]


class _Supervisor(Actor[_SpawnRun, _RunRef]):
    """The team's planner: parent of every run's planner actor, so a crashed
    run fails alone and its caller is told why."""

    def __init__(self, runtime: TeamRuntime) -> None:
        self._runtime = runtime
        self._channels: dict[str, RunChannel] = {}

    async def receive(self, message: _SpawnRun) -> _RunRef:
        match message:
            case _SpawnRun(run_id=run_id, goal=goal, channel=channel, run_span=span):
                # Forget finished runs here, so the table stays the size of the live runs.
                self._channels = {k: c for k, c in self._channels.items() if not c.done}
                self._channels[run_id] = channel
                return await self.ctx.spawn(
                    lambda: RunActor(self._runtime, run_id, goal, channel, span),
                    name=run_id,
                    capacity=1024,
                    restart=RestartPolicy(max_restarts=0),
                )
            case _:
                assert_never(message)

    async def on_child_failed(self, failure: ChildFailed) -> None:
        channel = self._channels.pop(failure.child.name, None)
        if channel is not None and not channel.done:
            error = RunError(
                f"the run's planner crashed: {type(failure.error).__name__}: {failure.error}"
            )
            error.__cause__ = failure.error
            channel.error = error
            channel.close(
                RunFailed(run_id=failure.child.name, error_type="RunError", message=str(error))
            )


@final
class RunningTeam:
    """A started team; runs goals. Get one from ``Team.start()``."""

    def __init__(
        self, team: Team, supervisor: ActorRef[_SpawnRun, _RunRef], telemetry: Telemetry
    ) -> None:
        self.team = team
        self._supervisor = supervisor
        self._telemetry = telemetry
        self._ids = itertools.count(1)

    @classmethod
    async def spawn(cls, team: Team, system: ActorSystem) -> RunningTeam:
        telemetry = team.telemetry or Telemetry()
        refs: dict[str, ActorRef[WorkerMessage, None]] = {}
        prompts = team.planner.prompts
        for worker in team.workers:
            refs[worker.name] = await system.spawn(
                functools.partial(WorkerActor, worker, prompts, telemetry),
                name=f"{team.name}/{worker.name}",
                capacity=256,
            )
        runtime = TeamRuntime(
            name=team.name,
            planner=team.planner,
            workers={w.name: w for w in team.workers},
            worker_refs=refs,
            checks=team.checks,
            budget=team.budget,
            concurrency=team.concurrency,
            critic=team.critic,
            compression=team.compression,
            telemetry=telemetry,
        )
        supervisor = await system.spawn(lambda: _Supervisor(runtime), name=f"{team.name}/planner")
        return cls(team, supervisor, telemetry)

    async def run(self, goal: str) -> RunResult:
        """Run one goal to its result.

        Raises:
            PlanError: no valid plan within the allowed attempts.
            StepFailed: a step failed and no replan could recover it.
            BudgetExceeded: a budget ran out and the budget says ``on_exhausted="raise"``.
            RunError: anything else that ended the run without a result.
        """
        async with self._open(goal) as (channel, events):
            async for event in events:
                if isinstance(event, RunCompleted):
                    return event.result
        raise channel.error or RunCancelled("the run ended without a result")

    @asynccontextmanager
    async def stream(self, goal: str) -> AsyncIterator[AsyncIterator[Event]]:
        """Run one goal, yielding its events as they happen.

        The last event is ``RunCompleted`` (with the result) or ``RunFailed``.
        Leaving the block early cancels the run.
        """
        async with self._open(goal) as (_channel, events):
            yield events

    @asynccontextmanager
    async def _open(
        self, goal: str
    ) -> AsyncIterator[tuple[RunChannel, MemoryObjectReceiveStream[Event]]]:
        if not goal.strip():
            raise ConfigError("the goal is empty; say what the team should do")
        run_id = f"run-{next(self._ids)}-{uuid.uuid4().hex[:8]}"
        channel, events = RunChannel.open()
        ref: _RunRef | None = None
        with self._telemetry.run_span(self.team.name, run_id, goal) as span:
            try:
                ref = await self._supervisor.ask(_SpawnRun(run_id, goal, channel, span))
                await ref.send(StartRun())
                yield channel, events
            finally:
                with anyio.CancelScope(shield=True):
                    if ref is not None:
                        await _close_run(ref, channel, events)
                    events.close()
                _record_end(span, channel)


def _record_end(span: Span, channel: RunChannel) -> None:
    result = channel.result
    if result is None:
        error = channel.error or RunCancelled("the run ended without a result")
        record_run_end(
            span, status="failed", plan_versions=0, stale_dropped=0, error_type=type(error).__name__
        )
        return
    record_run_end(
        span,
        status=result.status,
        plan_versions=len(result.plans),
        stale_dropped=result.stale_reports_dropped,
        usage=result.usage,
        model_calls=result.model_calls,
        tool_calls=result.tool_calls,
    )


async def _close_run(
    ref: ActorRef[PlannerMessage, None],
    channel: RunChannel,
    events: MemoryObjectReceiveStream[Event],
) -> None:
    """Cancel the run if it is still going, wait (bounded) for it to wind down, stop its actor."""
    if ref.is_alive and not channel.done:
        ref.send_nowait(CancelRun())
        with anyio.move_on_after(_CANCEL_GRACE):
            async for _ in events:
                pass
    if ref.is_alive:
        await ref.stop()
