"""A team: one planner and its workers, started inside the caller's event loop.

``async with team.start() as running:`` spawns the team's actors in an actor
system owned by that block; ``await running.run(goal)`` and
``running.stream(goal)`` can be used by many tasks at once. Each run gets its
own planner actor (a child of the team's supervisor), so one run's failure or
cancellation never touches another's.

Nested teams: a :class:`~regiment.hierarchy.TeamWorker` in ``workers`` is
another team serving as one worker. Its child team is started by
``RunningTeam.spawn`` together with the parent, in the same actor system (so
leaving the parent's block stops both), and each step assigned to it becomes
one run of the child with ``allowance=`` the step's reserved share. A child
team without its own ``telemetry`` uses the parent's, so a nested run is one
trace.
"""

from __future__ import annotations

import functools
import itertools
import random
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass, field
from typing import assert_never, final

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream
from opentelemetry.trace import Span

from regiment.actors import (
    ActorRef,
    ActorSystem,
    open_actor_system,
)
from regiment.errors import ConfigError, RunCancelled, RunError
from regiment.hierarchy._budget import Budget
from regiment.hierarchy._checks import Check
from regiment.hierarchy._critic import Critic
from regiment.hierarchy._memory import Compression
from regiment.hierarchy._messages import StepAllowance, WorkerMessage
from regiment.hierarchy._planner import Planner
from regiment.hierarchy._result import RunResult
from regiment.hierarchy._supervisor import RunRef, SpawnRun, Supervisor, capped, close_run
from regiment.hierarchy.events import Event
from regiment.hierarchy.run._channel import RunChannel
from regiment.hierarchy.run._journaling import RunJournal, owner_name
from regiment.hierarchy.run._messages import StartRun
from regiment.hierarchy.run._runtime import TeamRuntime
from regiment.hierarchy.workers._live import LiveWorker
from regiment.hierarchy.workers._step_actor import StepActor
from regiment.hierarchy.workers._team_worker import TeamWorker, TeamWorkerActor
from regiment.hierarchy.workers._worker import Worker, WorkerActor, WorkerSpec
from regiment.journal import Journal, JournalSpec, open_journal
from regiment.telemetry import Telemetry, error_type
from regiment.tools import MCPHub, WorkerTools

__all__ = ("RunningTeam", "Team")


@final
@dataclass(frozen=True, kw_only=True)
class Team:
    """One planner and its workers.

    Attributes:
        name: the team's name (the root span is ``invoke_agent {name}``).
        planner: how the team plans and synthesises.
        workers: the specialists steps are assigned to: workers, or whole
            teams wrapped in :class:`~regiment.hierarchy.TeamWorker`.
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
    workers: Sequence[Worker | TeamWorker]
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
    async def start(self, *, journal: JournalSpec = None) -> AsyncIterator[RunningTeam]:
        """Spawn the team's actors in the current event loop; stop them on exit.

        Args:
            journal: where runs are journaled: ``None`` (not at all, the default),
                a file path (SQLite), a ``postgresql://`` URL, or a ``Journal``
                (left open for its owner to close).
        """
        opened = None if journal is None else await open_journal(journal)
        try:
            # The hub outlives the actors: a worker's last tool call ends before its MCP
            # sessions close. Servers start here, eagerly (see regiment.tools.MCPHub).
            async with MCPHub.open() as mcp, open_actor_system() as system:
                running = await RunningTeam.spawn(self, system, mcp=mcp)
                running.journal = opened
                yield running
        finally:
            if opened is not None and opened is not journal:
                with anyio.CancelScope(shield=True):
                    await opened.close()

    async def run(self, goal: str) -> RunResult:
        """Start the team, run one goal, stop the team (the one-call form for scripts)."""
        async with self.start() as running:
            return await running.run(goal)


@final
class RunningTeam:
    """A started team; runs goals. Get one from ``Team.start()``."""

    def __init__(
        self,
        team: Team,
        supervisor: ActorRef[SpawnRun, RunRef],
        telemetry: Telemetry,
        channels: dict[str, RunChannel],
    ) -> None:
        self.team = team
        self._supervisor = supervisor
        self._telemetry = telemetry
        self._ids = itertools.count(1)
        self._channels = channels
        self.journal: Journal | None = None  # set by Team.start(journal=...)

    @property
    def active_runs(self) -> int:
        """How many runs of this team are in progress (started and not yet returned)."""
        return len(self._channels)

    @classmethod
    async def spawn(
        cls,
        team: Team,
        system: ActorSystem,
        *,
        telemetry: Telemetry | None = None,
        mcp: MCPHub | None = None,
    ) -> RunningTeam:
        """Spawn a team's actors, and those of every team nested in it, in ``system``.

        Args:
            team: the team to start.
            system: the actor system the actors live in (and stop with).
            telemetry: used when ``team.telemetry`` is ``None``; nested teams
                pass their parent's, so a nested run is one trace.
            mcp: starts and owns the workers' MCP servers (``Team.start()`` passes one).

        Raises:
            ConfigError: the team contains itself through its team workers, a
                worker has MCP servers but no hub was given, or MCP tool names clash.
            ToolError: an MCP server could not be started.
        """
        return await _spawn_team(team, system, telemetry, prefix="", outer=(), mcp=mcp)

    async def run(
        self,
        goal: str,
        *,
        allowance: StepAllowance | None = None,
        concurrency: int | None = None,
        session: str | None = None,
    ) -> RunResult:
        """Run one goal to its result.

        Args:
            goal: what the team should do.
            allowance: caps this run's budget: its model calls, tool calls and
                tokens are each the smaller of the team's budget and the
                allowance (a parent team passes the share it reserved).
            concurrency: how many of this run's steps may be in flight at once;
                ``None`` uses the team's ``concurrency``. A worker's
                ``max_concurrent_steps`` is shared by every run of the started
                team, so concurrent runs also wait for each other there.
            session: the session the run belongs to (recorded in the journal).

        Raises:
            PlanError: no valid plan within the allowed attempts.
            StepFailed: a step failed and no replan could recover it.
            BudgetExceeded: a budget ran out and the budget says ``on_exhausted="raise"``.
            RunError: anything else that ended the run without a result.
        """
        opened = self._open(
            goal, allowance, streaming=False, concurrency=concurrency, session=session
        )
        async with opened as (channel, events):
            async for _ in events:  # nothing is sent: this waits for the run's end
                pass
        if channel.result is not None:
            return channel.result
        raise channel.error or RunCancelled("the run ended without a result")

    @asynccontextmanager
    async def stream(
        self,
        goal: str,
        *,
        allowance: StepAllowance | None = None,
        concurrency: int | None = None,
        session: str | None = None,
    ) -> AsyncIterator[AsyncIterator[Event]]:
        """Run one goal, yielding its events as they happen.

        The last event is ``RunCompleted`` (with the result) or ``RunFailed``.
        Leaving the block early cancels the run. ``allowance`` and
        ``concurrency`` and ``session`` are as for :meth:`run`.
        """
        opened = self._open(
            goal, allowance, streaming=True, concurrency=concurrency, session=session
        )
        async with opened as (_channel, events):
            yield events

    def _open_for_step(
        self, goal: str, allowance: StepAllowance
    ) -> AbstractAsyncContextManager[tuple[RunChannel, MemoryObjectReceiveStream[Event]]]:
        """What a parent's team-worker actor uses to run a step on this team."""
        return self._open(goal, allowance, streaming=False)

    @asynccontextmanager
    async def _open(
        self,
        goal: str,
        allowance: StepAllowance | None,
        *,
        streaming: bool,
        concurrency: int | None = None,
        session: str | None = None,
    ) -> AsyncIterator[tuple[RunChannel, MemoryObjectReceiveStream[Event]]]:
        if not goal.strip():
            raise ConfigError("the goal is empty; say what the team should do")
        if concurrency is None:
            concurrency = self.team.concurrency
        elif isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
            raise ConfigError(
                f"concurrency={concurrency!r}: a run's concurrency must be a whole number "
                "of at least 1 (or None for the team's)"
            )
        # Unique within the team by the counter, and across teams and processes with
        # high probability; no system call (uuid4 reads the OS's random source).
        run_id = f"run-{next(self._ids)}-{random.getrandbits(32):08x}"
        run_journal: RunJournal | None = None
        if self.journal is not None:  # JournalError: the run is refused, nothing started
            run_journal = await RunJournal.create(
                self.journal, self.team, run_id, goal, session, owner_name()
            )
        channel, events = RunChannel.open(streaming=streaming)
        budget = capped(self.team.budget, allowance)
        if run_journal is not None:
            channel.journal = run_journal
        ref: RunRef | None = None
        with self._telemetry.run_span(
            self.team.name,
            run_id,
            goal,
            provider=self.team.planner.model.provider,
            session_id=session,
        ) as span:
            self._channels[run_id] = channel
            try:
                # Shielded: once the ask is delivered the run actor gets spawned, and a
                # cancel landing before the reply would leave it with no one to close it.
                with anyio.CancelScope(shield=True):
                    ref = await self._supervisor.ask(
                        SpawnRun(run_id, goal, channel, span, budget, concurrency)
                    )
                assert ref is not None  # a shielded scope never skips its body
                await ref.send(StartRun())
                yield channel, events
            finally:
                try:
                    with anyio.CancelScope(shield=True):
                        if ref is not None:
                            await close_run(ref, channel, events)
                        events.close()
                        if run_journal is not None:
                            await run_journal.close()  # JournalError: the run is not durable
                finally:
                    del self._channels[run_id]
                _record_end(self._telemetry, span, channel)


async def _spawn_team(
    team: Team,
    system: ActorSystem,
    inherited: Telemetry | None,
    *,
    prefix: str,
    outer: tuple[Team, ...],
    mcp: MCPHub | None,
) -> RunningTeam:
    if any(t is team for t in outer):
        path = " -> ".join(t.name for t in (*outer, team))
        raise ConfigError(f"team '{team.name}' contains itself ({path}); nest distinct teams")
    telemetry = team.telemetry or inherited or Telemetry()
    refs: dict[str, ActorRef[WorkerMessage, None]] = {}
    specs: dict[str, WorkerSpec] = {}
    prompts = team.planner.prompts
    base = f"{prefix}{team.name}"
    if mcp is not None:  # all of this team's MCP servers start at once, not worker by worker
        await mcp.start([s for w in team.workers if isinstance(w, Worker) for s in w.mcp_servers])
    for worker in team.workers:
        name = f"{base}/{worker.name}"
        factory: Callable[[], StepActor]
        match worker:
            case Worker() if worker.placement is not None:
                from regiment.hierarchy.workers._ray import start_ray_worker  # ray loads here

                specs[worker.name] = worker
                factory = await start_ray_worker(worker, prompts, telemetry)
            case Worker():
                tools = await _worker_tools(worker, mcp)
                specs[worker.name] = LiveWorker(worker, tools) if worker.mcp_servers else worker
                factory = functools.partial(WorkerActor, worker, prompts, telemetry, tools)
            case TeamWorker():
                # The child team lives in the parent's actor system: it stops with it.
                specs[worker.name] = worker
                child = await _spawn_team(
                    worker.team, system, telemetry, prefix=f"{name}/", outer=(*outer, team), mcp=mcp
                )
                factory = functools.partial(
                    TeamWorkerActor, worker, team.name, child._open_for_step, telemetry
                )
            case _:
                assert_never(worker)
        refs[worker.name] = await system.spawn(factory, name=name, capacity=256)
    runtime = TeamRuntime(
        name=team.name,
        planner=team.planner,
        workers=specs,
        worker_refs=refs,
        checks=team.checks,
        budget=team.budget,
        concurrency=team.concurrency,
        critic=team.critic,
        compression=team.compression,
        telemetry=telemetry,
    )
    channels: dict[str, RunChannel] = {}
    supervisor = await system.spawn(lambda: Supervisor(runtime, channels), name=f"{base}/planner")
    return RunningTeam(team, supervisor, telemetry, channels)


async def _worker_tools(worker: Worker, mcp: MCPHub | None) -> WorkerTools:
    """The worker's live tools, starting its MCP servers (once per hub) first."""
    if not worker.mcp_servers:
        return WorkerTools(worker.toolset)
    if mcp is None:
        raise ConfigError(
            f"worker '{worker.name}' has MCP servers, which need an MCPHub: start the team "
            "with Team.start(), or pass mcp= to RunningTeam.spawn"
        )
    return await mcp.worker_tools(worker.toolset, worker.mcp_servers)


def _record_end(telemetry: Telemetry, span: Span, channel: RunChannel) -> None:
    error: RunError | None = None
    result = channel.result
    if result is None:
        error = channel.error or RunCancelled("the run ended without a result")
        result = channel.tally  # what the run did before it failed, if it got that far
    status = "failed" if error is not None or result is None else result.status
    telemetry.recorder.run_end(
        span,
        status=status,
        plan_versions=len(result.plans) if result else 0,
        stale_dropped=result.stale_reports_dropped if result else 0,
        usage=result.usage if result else None,
        model_calls=result.model_calls if result else None,
        tool_calls=result.tool_calls if result else None,
        steps=len(result.steps) if result else None,
        error_type=None if error is None else error_type(error),
    )
