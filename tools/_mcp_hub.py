"""The MCP servers of one running team, and each worker's live tool set.

Lifecycle (the choice issue #21 leaves open): servers start *eagerly*, when
the team starts (``Team.start()`` opens an :class:`MCPHub`, and each worker's
servers are started and listed before the team's actors run), so a server
that cannot start, or a tool-name clash, fails ``Team.start()`` with a clear
error instead of failing a step later. Each server object is started once per
hub, however many workers use it. Leaving the hub's block cancels every
connection's owner task, which closes its session and stops its process.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from contextlib import AbstractAsyncContextManager
from types import TracebackType
from typing import TYPE_CHECKING, final

import anyio
from anyio.abc import TaskGroup

from regiment._misuse import EnterFirst
from regiment.errors import ConfigError, ToolError
from regiment.tools._toolset import Toolset

if TYPE_CHECKING:
    from opentelemetry.trace import Tracer

    from regiment.tools._mcp_connection import MCPConnection
    from regiment.tools._mcp_server import MCPServer

__all__ = ("MCPHub", "WorkerTools")

logger = logging.getLogger("regiment.tools.mcp")


@final
class WorkerTools:
    """A worker's tools as they are now: its own tool set plus its MCP servers' tools.

    ``current()`` is cheap; it builds a new ``Toolset`` only after a server's
    tool list changed (``notifications/tools/list_changed``).

    Raises:
        ConfigError: two tools would have the same name; the message names both sources.
    """

    def __init__(
        self,
        base: Toolset,
        connections: Sequence[MCPConnection] = (),
        require_approval: Sequence[str] = (),
    ) -> None:
        self._base = base
        self._connections = tuple(connections)
        self._approval = tuple(require_approval)  # tool names (MCP ones too) needing approval
        self._versions = self._now()
        self._current = self._build()

    @property
    def connections(self) -> tuple[MCPConnection, ...]:
        """The worker's MCP server connections."""
        return self._connections

    def current(self) -> Toolset:
        """The tool set to offer the model now."""
        if not self._connections:  # no MCP servers: the tool set never changes
            return self._current
        versions = self._now()
        if versions != self._versions:
            self._versions = versions
            try:
                self._current = self._build()
            except ConfigError as exc:  # a server renamed a tool into a clash mid-run
                logger.error("tool list of %r not refreshed: %s", self._base.name, exc)
        return self._current

    def _now(self) -> tuple[int, ...]:
        return tuple(c.version for c in self._connections)

    def _build(self) -> Toolset:
        if not self._connections:
            return self._base
        own = f"the tools of {self._base.name!r}"
        source: dict[str, str | MCPServer] = dict.fromkeys(self._base.names, own)
        tools = list(self._base.tools)
        for connection in self._connections:
            server = connection.server
            for tool in connection.tools:
                if tool.name in source:
                    raise ConfigError(_clash(tool.name, source[tool.name], server))
                source[tool.name] = server
                tools.append(tool)
        base = self._base
        built = Toolset(
            base.name,
            tools,
            max_concurrency=base.max_concurrency,
            approver=base.approver,
            max_result_chars=base.max_result_chars,
        )
        return built.requiring_approval([n for n in self._approval if n in source])


@final
class MCPHub:
    """Owns the MCP server connections of one running team.

    ::

        async with MCPHub.open() as hub:
            tools = await hub.worker_tools(Toolset("files"), [MCPServer.stdio(...)])
            result = await tools.current().call("read_file", {"path": "a"}, call_id="c1")
    """

    def __init__(self, task_group: TaskGroup, tracer: Tracer | None = None) -> None:
        self._tg = task_group
        self._tracer = tracer
        self._connections: dict[int, MCPConnection] = {}
        self._starting: dict[int, anyio.Event] = {}

    @classmethod
    def open(cls, tracer: Tracer | None = None) -> AbstractAsyncContextManager[MCPHub]:
        """A hub whose connections all close, and whose servers all stop, on exit.

        ``tracer`` opens each call's ``tools/call {tool}`` CLIENT span (the team's
        ``Telemetry.tracer``); without it, the global tracer provider's.
        """
        return _HubScope(tracer)

    @property
    def connections(self) -> tuple[MCPConnection, ...]:
        """Every connection started so far."""
        return tuple(self._connections.values())

    async def worker_tools(
        self, base: Toolset, servers: Sequence[MCPServer], require_approval: Sequence[str] = ()
    ) -> WorkerTools:
        """Start the servers not started yet (at the same time), and give the live tool set
        (where every call of the tools ``require_approval`` names needs approval).

        Raises:
            ToolError: a server could not be started or listed.
            ConfigError: a tool-name clash, or ``include`` names a missing tool.
        """
        await self.start(servers)
        connections = [self._connections[id(s)] for s in servers]
        return WorkerTools(base, connections, require_approval)

    async def start(self, servers: Sequence[MCPServer]) -> None:
        """Start each server that is not started yet, all at once; wait until all are up.

        Raises:
            ToolError: a server could not be started (the first such error).
            ConfigError: ``include`` names a tool a server does not have.
        """
        errors: list[Exception] = []

        async def start_one(server: MCPServer) -> None:
            # The MCP client (its process and stream plumbing) loads with the first server.
            from regiment.tools._mcp_connection import MCPConnection

            key = id(server)
            if key in self._connections:
                return
            if key in self._starting:  # another worker is starting the same server
                await self._starting[key].wait()
                return
            self._starting[key] = anyio.Event()
            connection = MCPConnection(server, self._tracer)
            try:
                await self._tg.start(connection.run)
                self._connections[key] = connection
            except (ToolError, ConfigError) as exc:
                errors.append(exc)
            finally:
                self._starting.pop(key).set()

        async with anyio.create_task_group() as tg:
            for server in servers:
                tg.start_soon(start_one, server)
        if errors:
            raise errors[0]
        missing = [s.name for s in servers if id(s) not in self._connections]
        if missing:
            raise ToolError(f"MCP server {missing[0]!r} could not be started (see the log)")


class _HubScope(EnterFirst, AbstractAsyncContextManager[MCPHub]):
    """Owns the hub's task group; the ``async with`` body's error comes out as itself."""

    entered_as = ("MCPHub.open()", "hub")
    after = "; leaving the block closes its connections and stops its servers"

    def __init__(self, tracer: Tracer | None) -> None:
        self._tg: TaskGroup | None = None
        self._tracer = tracer

    async def __aenter__(self) -> MCPHub:
        if self._tg is not None:
            raise ConfigError("an MCPHub.open() context can be entered only once")
        self._tg = anyio.create_task_group()
        await self._tg.__aenter__()
        return MCPHub(self._tg, self._tracer)

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        assert self._tg is not None
        self._tg.cancel_scope.cancel()  # each owner task closes its session and stops its server
        if isinstance(exc, anyio.get_cancelled_exc_class()):
            await self._tg.__aexit__(exc_type, exc, tb)
        else:
            await self._tg.__aexit__(None, None, None)
        return None if exc is None else False


def _clash(name: str, first: str | MCPServer, server: MCPServer) -> str:
    if first is server:  # its own two tools, alike once made into names a model API takes
        return (
            f"MCP server {server.name!r} lists two tools that are both called {name!r} once "
            "their names are made usable by model APIs (letters, digits, '_' and '-', at "
            "most 64 characters with the prefix); leave one out with exclude=[its name "
            "as the server lists it]"
        )
    if isinstance(first, str):
        where = f"both {first} and MCP server {server.name!r}"
    elif first.name != server.name:
        where = f"both MCP server {first.name!r} and MCP server {server.name!r}"
    else:  # two servers alike (the same command, unnamed): tell them apart first
        word = _suggest(server)
        return (
            f"tool name {name!r} comes from two MCP servers both named {server.name!r}; "
            f"give them different names and prefixes (name='{word}_1', prefix='{word}_1_' "
            f"and name='{word}_2', prefix='{word}_2_'), or leave the tool out of one with "
            "exclude=[...]"
        )
    return (
        f"tool name {name!r} comes from {where}; give MCP server {server.name!r} a "
        f"prefix (prefix='{_suggest(server)}_') or leave the tool out with exclude=[...]"
    )


def _suggest(server: MCPServer) -> str:
    word = "".join(c if c.isalnum() else "_" for c in server.name.split("/")[-1].split()[-1])
    return word.strip("_")[:16] or "mcp"
