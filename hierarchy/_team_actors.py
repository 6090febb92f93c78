"""How a started team's parts are made: its workers' actor factories (local and on
Ray), what its runs share, and the checks a run or a nesting must pass first."""

from __future__ import annotations

import functools
from collections.abc import Callable, Container, Iterator, Mapping
from random import getrandbits
from typing import TYPE_CHECKING

from regiment.actors import ActorRef, ActorSystem
from regiment.errors import ActorFailed, ConfigError
from regiment.hierarchy._approvals import ApprovalDesk
from regiment.hierarchy._goal import check_goal
from regiment.hierarchy._messages import WorkerMessage
from regiment.hierarchy._ranges import run_concurrency
from regiment.hierarchy.guard._roles import RoleGuards
from regiment.hierarchy.run._channel import RunChannel
from regiment.hierarchy.run._runtime import TeamRuntime
from regiment.hierarchy.workers._approval_gate import ApprovalGate
from regiment.hierarchy.workers._journal_calls import RunCalls, RunLookup
from regiment.hierarchy.workers._step_actor import StepActor
from regiment.hierarchy.workers._worker import Worker, WorkerSpec
from regiment.hierarchy.workers._worker_actor import WorkerActor
from regiment.telemetry import Telemetry
from regiment.tools import WorkerTools

if TYPE_CHECKING:
    from regiment.hierarchy._team import Team
    from regiment.tools import MCPServer

__all__ = (
    "check_remote_deps",
    "check_run",
    "local_mcp_servers",
    "not_nested_in_itself",
    "run_calls",
    "runtime_of",
    "spawn_worker",
    "start_ray",
    "worker_actor",
)


async def start_ray(
    team: Team,
    telemetry: Telemetry,
    guards: RoleGuards,
    team_links: tuple[str, ApprovalDesk, RunLookup, Mapping[str, RunChannel]],
) -> dict[str, tuple[WorkerSpec, Callable[[], StepActor]]]:
    """The Ray-placed workers as the planner sees them and their actor factories, their
    replicas (a pool's at once) and MCP servers started; their steps reach the team's
    runs (journal, live events, approvals) as local ones do."""
    placed = [w for w in team.workers if isinstance(w, Worker) and w.placement is not None]
    if not placed:
        return {}
    from regiment.hierarchy.workers._ray import RunLinks, start_ray_workers  # ray loads here

    base, desk, runs, channels = team_links
    links = {
        w.name: RunLinks(
            runs, channels, ApprovalGate(desk, f"{base}/{w.name}", w.approval_timeout, telemetry)
        )
        for w in placed
    }
    return await start_ray_workers(
        placed, team.planner.prompts, telemetry, team.settings, guards.team, links
    )


def local_mcp_servers(team: Team) -> list[MCPServer]:
    """The MCP servers the team's process runs: its in-process workers' (a Ray-placed
    worker's run in its replicas)."""
    return [
        s
        for w in team.workers
        if isinstance(w, Worker) and w.placement is None
        for s in w.mcp_servers
    ]


def runtime_of(
    team: Team,
    specs: dict[str, WorkerSpec],
    refs: dict[str, ActorRef[WorkerMessage, None]],
    telemetry: Telemetry,
    guards: RoleGuards,
) -> TeamRuntime:
    """What the team's runs share: its planner, its started workers, its limits."""
    return TeamRuntime(
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
        settings=team.settings,
        guards=guards,
        output=None if team.output_type is None else team.output_shape(),
    )


def not_nested_in_itself(team: Team, outer: tuple[Team, ...]) -> None:
    if any(t is team for t in outer):
        path = " -> ".join(t.name for t in (*outer, team))
        raise ConfigError(f"team '{team.name}' contains itself ({path}); nest distinct teams")


def worker_actor(
    worker: Worker,
    team: Team,
    telemetry: Telemetry,
    tools: tuple[WorkerTools, ApprovalGate],
    runs: tuple[RunLookup, Mapping[str, RunChannel]],
    guards: RoleGuards,
) -> Callable[[], StepActor]:
    """How a worker's actor is made: its tools, its runs' lookup and streams, its guards."""
    (toolset, gate), (lookup, channels) = tools, runs
    return functools.partial(
        WorkerActor,
        worker,
        team.planner.prompts,
        telemetry,
        toolset,
        gate,
        lookup,
        channels,
        team.settings,
        guards.team,
    )


def check_remote_deps(team: Team, deps: object) -> None:
    """Deps that Ray-placed workers cannot get are refused at ``run()``, not mid-step."""
    remote = [w.name for w in team.workers if isinstance(w, Worker) and w.placement is not None]
    if remote:
        from regiment.hierarchy.workers._ray_join import check_remote_deps as check

        check(deps, remote)


def check_run(
    team: Team,
    goal: str,
    session: str | None,
    limit: int | None,
    deps: object,
    named: str | None = None,
    live: Container[str] = (),
) -> None:
    """A run's goal, session, concurrency and ``deps`` (and its id ``named``, if given: not
    one of the ``live`` runs'), checked before it waits to start.

    Raises:
        ConfigError: one of them is wrong (the message says which, and what to pass).
    """
    check_goal(goal, session)
    if limit is not None:  # None: the team's (no call: every run starts here, #22)
        run_concurrency(limit, team.concurrency)
    if deps is not None:
        check_remote_deps(team, deps)
    if named is not None and (named in live or not _fit_id(named)):
        raise ConfigError(
            f"run id {named!r} is in use or malformed: a run's id is unique, non-empty, and "
            "has no '~', '/', spaces or control characters; pass run_id=None for a new one"
        )


def _fit_id(run_id: str) -> bool:
    """Whether ``run_id`` can name a top-level run (see ``RunningTeam.stream``)."""
    return bool(run_id) and run_id.isprintable() and not any(c in run_id for c in "~/ ")


def new_run_id(ids: Iterator[int]) -> str:
    """Unique in the team by the counter, across teams very likely; no system call."""
    return f"run-{next(ids)}-{getrandbits(32):08x}"


def run_calls(channels: Mapping[str, RunChannel], run_id: str) -> RunCalls | None:
    channel = channels.get(run_id)
    return None if channel is None else channel.calls


async def spawn_worker(
    system: ActorSystem, factory: Callable[[], StepActor], name: str
) -> ActorRef[WorkerMessage, None]:
    """A worker's actor, started. A ``ConfigError`` its making raised (a ``Prompts`` hook
    that raised, say) is raised as it is: it names the worker and what to fix.

    Raises:
        ConfigError: the worker cannot be made as configured.
    """
    try:
        return await system.spawn(factory, name=name, capacity=256)
    except ActorFailed as exc:
        if isinstance(exc.__cause__, ConfigError):
            raise exc.__cause__ from exc.__cause__.__cause__
        raise
