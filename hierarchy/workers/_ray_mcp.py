"""MCP servers of Ray-placed workers: started in each replica, known in the team's process.

On a replica, :class:`ReplicaMCP` owns the MCP servers of the workers it hosts:
one Ray call (``StepHost.mcp_serve``, made by the team's process when the
replicas start) opens an :class:`~regiment.tools.MCPHub`, starts and lists every
server (a stdio server is a process on the Ray node; an HTTP server is reached
from it) and holds them until ``StepHost.mcp_stop``, which closes the sessions
and stops the processes as leaving ``Team.start()`` does in-process. What the
servers offer goes back to the team's process (:class:`MCPStarted`), where the
planner is told the tool names and approvals are decided against their schemas
(:func:`planner_tools`). This module does not import ``ray``.
"""

from __future__ import annotations

import logging
import os
import socket
from collections.abc import Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, final

import anyio

from regiment.errors import ConfigError, WorkerLost
from regiment.hierarchy.workers._live import worker_tools
from regiment.hierarchy.workers._ray_replica import when_back
from regiment.hierarchy.workers._worker import Worker
from regiment.tools import (
    MCPHub,
    MCPToolList,
    Toolset,
    WorkerTools,
    listed_tools,
    served_elsewhere,
)

if TYPE_CHECKING:
    from opentelemetry.trace import Tracer

__all__ = ("MCPStarted", "PlacedTools", "ReplicaMCP", "ReplicaServers", "planner_tools")

_log = logging.getLogger("regiment.ray")


@final
@dataclass(frozen=True, kw_only=True)
class MCPStarted:
    """What a replica's MCP servers offer once started, or why they did not start.

    Attributes:
        tools: by hosted worker (those with MCP servers), each server's listed tools.
        failed: the worker whose server did not start, and why; ``None`` if all did.
        version: how many tool lists the replica's servers have given so far.
    """

    tools: Mapping[str, tuple[MCPToolList, ...]] = field(default_factory=dict)
    failed: tuple[str, str] | None = None
    version: int = 0


@final
class ReplicaMCP:
    """The MCP servers of one replica's workers (their sessions live in :meth:`serve`)."""

    def __init__(self, workers: Mapping[str, Worker], tracer: Tracer | None = None) -> None:
        self._tracer = tracer  # the replica's: each MCP call's CLIENT span
        self._workers = {n: w for n, w in workers.items() if w.mcp_servers}
        self._tools: dict[str, WorkerTools] = {}
        self._started: MCPStarted | None = None
        self._ready = anyio.Event()
        self._stop = anyio.Event()
        self._ended = anyio.Event()
        self._active = False  # a serve call holds the servers

    async def serve(self) -> None:
        """Start every worker's servers, then hold them until :meth:`stop` (or a cancel)."""
        if not self._workers:
            self._finish(MCPStarted())
            return
        if self._active:  # serving (or starting) already
            return
        if self._ended.is_set():  # served before and ended: a fresh start
            self._ready, self._ended = anyio.Event(), anyio.Event()
        self._active = True
        try:
            async with MCPHub.open(self._tracer) as hub:
                for name, worker in self._workers.items():
                    try:
                        self._tools[name] = await worker_tools(worker, hub)
                    except Exception as exc:  # ToolError, ConfigError: Team.start() says so
                        why = f"{str(exc) or type(exc).__name__}{_on_the_node(worker)}"
                        self._finish(MCPStarted(failed=(name, why)))
                        return
                self._finish(self.now())
                await self._stop.wait()
        finally:
            self._active = False
            self._tools.clear()  # a step after this finds its servers stopped
            if not self._ready.is_set():  # cancelled while starting: Team.start() must not wait
                name = next(iter(self._workers))
                self._finish(
                    MCPStarted(failed=(name, "its MCP servers were stopped while starting"))
                )
            self._ended.set()

    def _finish(self, started: MCPStarted) -> None:
        self._started = started
        self._ready.set()

    async def started(self) -> MCPStarted:
        """What :meth:`serve` started, once it has."""
        await self._ready.wait()
        assert self._started is not None
        return self._started

    async def stop(self) -> None:
        """Close the sessions and stop the servers; return once they are stopped."""
        self._stop.set()
        if self._ready.is_set() and self._workers:
            await self._ended.wait()

    @property
    def version(self) -> int:
        """How many tool lists the servers have given so far (a change adds one)."""
        return sum(c.version for tools in self._tools.values() for c in tools.connections)

    def now(self) -> MCPStarted:
        """The servers' tools as they are now."""
        listed = {name: listed_tools(tools) for name, tools in self._tools.items()}
        return MCPStarted(tools=listed, version=self.version)

    @property
    def serving(self) -> bool:
        """Whether the servers are up (or there are none)."""
        return not self._workers or bool(self._tools)

    def toolset(self, worker: Worker) -> Toolset:
        """The tools a step of ``worker`` gets now: its own and its MCP servers'.

        Raises:
            RuntimeError: the worker has MCP servers that are not running on this replica.
        """
        if not worker.mcp_servers:
            return worker.toolset
        tools = self._tools.get(worker.name)
        if tools is None:
            raise RuntimeError(
                f"worker '{worker.name}': the MCP servers of this Ray replica are not running "
                "(Ray restarted the replica after it died, or the team is stopping); they "
                "start only with the team: start the team again to bring them back"
            )
        return tools.current()


def _on_the_node(worker: Worker) -> str:
    """Where a replica runs a stdio server, for the message of one that did not start:
    a path that exists beside the team's process may not exist there."""
    if all(hasattr(s.transport, "url") for s in worker.mcp_servers):  # HTTP only
        return ""
    return (
        f" (a stdio server runs on the Ray node {socket.gethostname()}, in the replica's "
        f"working directory {os.getcwd()} unless its cwd is given: its command and paths "
        "must be valid there)"
    )


@final
class PlacedTools:
    """A Ray-placed worker's tools as the team's process knows them now (see
    :func:`planner_tools`), made again once its replicas' MCP tool lists changed."""

    def __init__(self, worker: Worker, servers: ReplicaServers) -> None:
        self._worker = worker
        self._servers = servers
        self._made = (-1, worker.toolset)

    def current(self) -> Toolset:
        """The tool set now (the planner's capabilities, the approvals' tools)."""
        generation, made = self._made
        if generation != self._servers.generation:
            generation = self._servers.generation
            lists = self._servers.tools.get(self._worker.name, ())
            made = planner_tools(self._worker, lists)
            self._made = (generation, made)
        return made

    async def caught_up(self, replica: int) -> Toolset:
        """The tool set once replica ``replica``'s tool lists are caught up with (a step
        there asks about a tool its servers added since the step began)."""
        await self._servers.catch_up(replica)
        return self.current()


def planner_tools(worker: Worker, lists: tuple[MCPToolList, ...]) -> Toolset:
    """The Ray-placed ``worker``'s tools as the team's process knows them: its own,
    and a stand-in for each MCP tool its replicas listed (run there, never here).

    Raises:
        ConfigError: ``require_approval`` names a tool it does not have.
    """
    where = "on the worker's Ray replicas"
    return served_elsewhere(worker.toolset, lists, tuple(worker.require_approval), where)


@final
class ReplicaServers:
    """The team's side of the MCP servers of a pool's replicas (``handles``, Ray actor
    handles of :class:`~regiment.hierarchy.workers._ray_host.StepHost`): started with
    the replicas, started again on a replica Ray restarted (they died with it), and
    stopped before the replicas end."""

    def __init__(
        self,
        handles: Sequence[Any],
        where: str,
        unavailable: type[Exception] = Exception,
        back_within: float = 120.0,
    ) -> None:
        self._handles = list(handles)
        self._where = where
        self._unavailable = unavailable  # Ray's error for a replica that is restarting
        self._back_within = back_within  # seconds a restarted replica has to come back
        # each replica's mcp_serve call; ``None``: nothing to watch (no servers, or stopped)
        self._serving: list[Future[object] | None] = [None] * len(self._handles)
        self._reviving = [anyio.Lock() for _ in self._handles]
        self._suspect: set[int] = set()  # replicas where a step was lost
        self._versions = [0] * len(self._handles)  # each replica's tool lists, as last seen
        self.generation = 0  # goes up each time :attr:`tools` is replaced
        self.tools: Mapping[str, tuple[MCPToolList, ...]] = {}  # by worker, as the first listed

    async def start(self) -> None:
        """Start every replica's servers; the tools the first one listed are :attr:`tools`.

        Raises:
            ConfigError: a server did not start on a replica; it names the worker and server.
        """
        listed = [await self._serve(index) for index in range(len(self._handles))]
        for started in listed:
            if started.failed is not None:
                worker, why = started.failed
                raise ConfigError(f"worker '{worker}' ({self._where}) cannot start: {why}")
        self.tools = listed[0].tools if listed else {}
        self._versions = [started.version for started in listed]
        if not self.tools:  # no servers: their calls have ended already
            self._serving = [None] * len(self._handles)

    async def _serve(self, index: int) -> MCPStarted:
        handle = self._handles[index]
        self._serving[index] = handle.mcp_serve.remote().future()  # held until mcp_stop
        started: MCPStarted = await handle.mcp_started.remote()
        return started

    async def refresh(self, index: int, version: int) -> None:
        """After a step on replica ``index``: if its servers' tool lists changed
        (``version``), take its lists as the worker's tools from now on."""
        if self._serving[index] is None or version == self._versions[index]:
            return
        if not await self.catch_up(index):
            self._versions[index] = version  # it did not answer: not asked again for these

    async def catch_up(self, index: int) -> bool:
        """Take replica ``index``'s servers' tool lists as they are now, if they changed
        since they were last seen (a step there called a tool that added one, say);
        whether the replica answered."""
        if self._serving[index] is None:
            return True  # no servers there (or stopped): nothing to catch up with
        try:
            now: MCPStarted = await self._handles[index].mcp_tools.remote()
        except Exception as exc:  # the replica is gone, as a rule: its next step finds out
            _log.warning(
                "a Ray replica did not give its MCP servers' changed tool lists "
                "(%s: %s); the worker keeps the tools it knew",
                type(exc).__name__,
                exc,
            )
            return False
        if now.version != self._versions[index]:
            self.tools, self._versions[index] = now.tools, now.version
            self.generation += 1
        return True

    def lost(self, index: int) -> None:
        """A step on replica ``index`` was lost: check its servers before its next step."""
        self._suspect.add(index)

    async def revive(self, index: int, worker: str) -> None:
        """Before a step on replica ``index``: if it may have died since its servers
        started (their call ended, or a step there was lost), and Ray restarted it,
        start them again there once it is back.

        Raises:
            WorkerLost: they did not start again (the step goes to another replica).
        """
        serving = self._serving[index]
        if serving is None or not (serving.done() or index in self._suspect):
            return
        async with self._reviving[index]:
            if self._serving[index] is not serving:
                return  # another step revived it meanwhile
            self._suspect.discard(index)
            handle = self._handles[index]
            serving_now = await self._serving_now(handle)
            if serving_now is None or serving_now:
                return  # gone for good (its step's call says so), or its servers are up
            try:
                started = await self._serve(index)
            except Exception as exc:  # it died again meanwhile
                started = MCPStarted(failed=(worker, f"{type(exc).__name__}: {exc}"))
        self._versions[index] = started.version
        if started.failed is not None:
            raise WorkerLost(
                f"worker '{worker}': Ray restarted one of its replicas, and its MCP servers "
                f"did not start again there ({started.failed[1]})"
            )
        _log.warning("worker '%s': Ray restarted a replica; its MCP servers started again", worker)

    async def _serving_now(self, handle: Any) -> bool | None:
        """Whether the replica's servers are up, once Ray has it back (``None``: it is
        gone for good, or did not come back within the replicas' start timeout)."""
        try:
            serving: bool = await when_back(
                handle.mcp_serving.remote, self._unavailable, self._back_within
            )
        except Exception:
            return None
        return serving

    async def stop(self, wait: float, indices: Sequence[int] | None = None) -> None:
        """Stop the replicas' servers (their processes end) before the replicas end (only
        those of replicas ``indices``: the others are killed); a replica that does not
        answer within ``wait`` seconds is left to be killed."""
        self._serving = [None] * len(self._handles)  # a stopped server is not revived
        handles = self._handles if indices is None else [self._handles[i] for i in indices]
        with anyio.CancelScope(shield=True), anyio.move_on_after(wait):
            async with anyio.create_task_group() as tg:
                for handle in handles:
                    tg.start_soon(_stop_one, handle)


async def _stop_one(handle: Any) -> None:
    try:
        await handle.mcp_stop.remote()
    except Exception as exc:  # a replica that is gone has nothing to stop (it is killed next)
        _log.debug("a Ray replica's MCP servers were not stopped: %s: %s", type(exc).__name__, exc)
