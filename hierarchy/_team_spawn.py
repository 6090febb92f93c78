"""Starting a team: its workers' actors (local, on Ray, or a nested team's), its
supervisor, and the ``RunningTeam`` that runs goals on them."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, assert_never

from regiment.actors import ActorRef, ActorSystem
from regiment.hierarchy._approvals import ApprovalDesk
from regiment.hierarchy._messages import WorkerMessage
from regiment.hierarchy._nested_runs import open_nested
from regiment.hierarchy._running import RunningTeam
from regiment.hierarchy._supervisor import RunSpawner, Supervisor
from regiment.hierarchy._team_actors import (
    local_mcp_servers,
    not_nested_in_itself,
    run_calls,
    runtime_of,
    spawn_worker,
    start_ray,
    worker_actor,
)
from regiment.hierarchy.run._channel import RunChannel
from regiment.hierarchy.run._guarding import enclosing, role_guards
from regiment.hierarchy.workers._approval_gate import ApprovalGate
from regiment.hierarchy.workers._live import LiveWorker, worker_tools
from regiment.hierarchy.workers._step_actor import StepActor
from regiment.hierarchy.workers._team_worker import TeamWorker, TeamWorkerActor
from regiment.hierarchy.workers._worker import Worker, WorkerSpec
from regiment.telemetry import Telemetry

if TYPE_CHECKING:
    from regiment.hierarchy._team import Team
    from regiment.tools import MCPHub

__all__ = ("spawn_team",)


async def spawn_team(
    team: Team,
    system: ActorSystem,
    inherited: Telemetry | None,
    *,
    prefix: str,
    outer: tuple[Team, ...],
    mcp: MCPHub | None,
    desk: ApprovalDesk,
) -> RunningTeam:
    """``team``'s actors and its nested teams' (prefixed), in ``system``, ready to run."""
    not_nested_in_itself(team, outer)
    telemetry = team.telemetry or inherited or Telemetry()
    refs: dict[str, ActorRef[WorkerMessage, None]] = {}
    specs: dict[str, WorkerSpec] = {}
    channels: dict[str, RunChannel] = {}  # the runs in progress: workers stream to them
    runs = functools.partial(run_calls, channels)  # a worker's way to its step's run
    base = f"{prefix}{team.name}"
    if mcp is not None:  # all of this team's MCP servers start at once, not worker by worker
        await mcp.start(local_mcp_servers(team))
    guards = role_guards(
        (*enclosing([t.guardrails for t in outer]), *team.guardrails), team.planner, team.critic
    )
    on_ray = await start_ray(team, telemetry, guards, (base, desk, runs, channels))
    for worker in team.workers:
        name = f"{base}/{worker.name}"
        factory: Callable[[], StepActor]
        match worker:
            case Worker() if worker.placement is not None:
                specs[worker.name], factory = on_ray[worker.name]
            case Worker():
                tools = await worker_tools(worker, mcp)
                specs[worker.name] = LiveWorker(worker, tools) if worker.mcp_servers else worker
                gate = ApprovalGate(desk, name, worker.approval_timeout, telemetry)
                factory = worker_actor(
                    worker, team, telemetry, (tools, gate), (runs, channels), guards
                )
            case TeamWorker():
                # The child team lives in the parent's actor system: it stops with it.
                specs[worker.name] = worker
                up = (*outer, team)
                child = await spawn_team(
                    worker.team, system, telemetry, prefix=f"{name}/", outer=up, mcp=mcp, desk=desk
                )
                nested = functools.partial(open_nested, child, channels)
                factory = functools.partial(TeamWorkerActor, worker, team.name, nested, telemetry)
            case _:
                assert_never(worker)
        refs[worker.name] = await spawn_worker(system, factory, name)
    runtime = runtime_of(team, specs, refs, telemetry, guards)
    spawner = RunSpawner(
        runtime,
        f"{base}/planner",
        system.new_wakeup,
        system.checkpoint,
        system.checkpoint_if_cancelled,
        system.new_cancel_scope,
    )
    await system.spawn(lambda: Supervisor(spawner, channels), name=spawner.name)
    return RunningTeam(team, spawner, telemetry, channels, desk)
