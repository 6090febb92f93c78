"""One MCP server's connection, owned by one task.

The ``mcp`` SDK builds its sessions and transports on anyio task groups, and a
task group must be entered and exited by the same task. So one owner task
(:meth:`MCPConnection.run`, started in the hub's task group) opens the
transport and the ``ClientSession``, serves calls, restarts the server when
the connection breaks, and closes everything when it is cancelled. Callers
never touch the session: :meth:`MCPConnection.call` sends the request to the
owner over a memory stream and waits for the answer on a one-shot stream. A
caller that is cancelled (a step timeout, a cancelled run, the tool's own
timeout) cancels only the scope of its own call inside the owner, which the
SDK turns into ``notifications/cancelled``; the session lives on.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import anyio
from anyio.abc import TaskGroup, TaskStatus
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from opentelemetry.util.types import AttributeValue

from regiment._json import JsonObject
from regiment.errors import ConfigError, ToolError
from regiment.tools._mcp_server import MCPServer
from regiment.tools._mcp_tools import mcp_tool
from regiment.tools._mcp_transport import open_session, span_attributes
from regiment.tools._tool import Tool

if TYPE_CHECKING:
    from mcp.client.session import ClientSession, IncomingMessage
    from mcp.types import CallToolResult
    from mcp.types import Tool as ListedTool

__all__ = ("MCPConnection", "MCPServerLost")

logger = logging.getLogger("regiment.tools.mcp")


class MCPServerLost(ToolError):
    """The connection to an MCP server broke during a call, or the server is gone."""


@dataclass(eq=False)
class _Call:
    name: str
    arguments: JsonObject
    reply: MemoryObjectSendStream[CallToolResult | ToolError]
    scope: anyio.CancelScope = field(default_factory=anyio.CancelScope)


class MCPConnection:
    """The live connection to one :class:`MCPServer` in a running team.

    Start :meth:`run` with ``await task_group.start(connection.run)``: it returns
    once the server is up and its tools are listed. Cancel the task group to
    close the session and stop the server.
    """

    def __init__(self, server: MCPServer) -> None:
        self.server = server
        # Unbounded on purpose: a caller must never block on the owner, whose only
        # work per request is to start one task.
        self._send, self._requests = anyio.create_memory_object_stream[_Call](math.inf)
        self._tools: tuple[Tool[..., object], ...] = ()
        self._version = 0
        self._restarts = 0
        self._gone: str | None = None
        self._held: list[_Call] = []  # taken from the stream after the session broke
        self._listed = anyio.Event()

    @property
    def tools(self) -> tuple[Tool[..., object], ...]:
        """The server's tools as last listed (filtered and prefixed)."""
        return self._tools

    @property
    def version(self) -> int:
        """Goes up each time the tool list is replaced."""
        return self._version

    async def wait_listed(self, after: int) -> None:
        """Wait until the tool list's ``version`` is past ``after`` (a refresh happened)."""
        while self._version <= after:
            await self._listed.wait()

    @property
    def restarts(self) -> int:
        """How many times the server was started again after its connection broke."""
        return self._restarts

    async def call(self, name: str, arguments: JsonObject) -> CallToolResult:
        """Call the server's tool ``name`` (its own name, unprefixed) through the owner.

        Raises:
            MCPServerLost: the connection broke during the call, or the server is stopped.
            ToolError: the server answered with a protocol error.
        """
        if self._gone is not None:
            raise MCPServerLost(self._gone)
        reply: MemoryObjectSendStream[CallToolResult | ToolError]
        answer: MemoryObjectReceiveStream[CallToolResult | ToolError]
        reply, answer = anyio.create_memory_object_stream(1)
        request = _Call(name, arguments, reply)
        with answer:
            try:
                self._send.send_nowait(request)
            except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                reply.close()
                raise MCPServerLost(f"MCP server {self.server.name!r} is stopped") from None
            try:
                outcome = await answer.receive()
            except anyio.EndOfStream:
                raise MCPServerLost(self._gone or self._lost()) from None
            finally:
                request.scope.cancel()  # a no-op once answered; else stops the call in the owner
        if isinstance(outcome, ToolError):
            raise outcome
        return outcome

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """The owner task: start, serve, restart (bounded), and on cancel close the session.

        Raises:
            ToolError: the server could not be started or its tools not listed.
            ConfigError: ``include`` names a tool the server does not have.
        """
        ready = False

        def on_ready() -> None:
            nonlocal ready
            if not ready:
                ready = True
                task_status.started()

        with self._send, self._requests:  # closed with the owner: later calls fail fast
            while True:
                try:
                    await self._lifetime(on_ready)
                    reason = "it closed the connection"
                except Exception as exc:  # the SDK's task groups may wrap it in a group
                    inner = _innermost(exc)
                    if not ready:
                        if isinstance(inner, ConfigError):
                            raise inner from None
                        raise ToolError(self._not_started(inner)) from exc
                    reason = _why(inner)
                if self._restarts >= self.server.max_restarts:
                    self._gone = (
                        f"MCP server {self.server.name!r} stopped ({reason}) and was already "
                        f"restarted {self._restarts} times (max_restarts="
                        f"{self.server.max_restarts}); its tools are unavailable until the team restarts"
                    )
                    logger.error("%s", self._gone)
                    await self._refuse()
                    return
                self._restarts += 1
                logger.warning(
                    "MCP server %r stopped (%s); restarting it", self.server.name, reason
                )

    async def _lifetime(self, on_ready: Callable[[], None]) -> None:
        """One session from start to a broken connection (or cancellation)."""
        changed_send, changed = anyio.create_memory_object_stream[None](1)

        async def on_message(message: IncomingMessage) -> None:
            from mcp.types import ToolListChangedNotification

            if isinstance(message, ToolListChangedNotification):
                with suppress(anyio.WouldBlock, anyio.BrokenResourceError):
                    changed_send.send_nowait(None)
            elif isinstance(message, Exception):
                logger.debug("MCP server %r transport: %r", self.server.name, message)

        ended = anyio.Event()
        with changed_send, changed:
            async with open_session(self.server, on_message, ended) as session:
                with anyio.fail_after(self.server.start_timeout):
                    initialized = await session.initialize()
                    attributes = span_attributes(self.server, initialized.protocol_version)
                    await self._list(session, attributes, strict=True)
                on_ready()
                await self._serve(session, changed, attributes, ended)

    async def _serve(
        self,
        session: ClientSession,
        changed: anyio.abc.ObjectReceiveStream[None],
        attributes: dict[str, AttributeValue],
        ended: anyio.Event,
    ) -> None:
        broken = anyio.Event()
        async with anyio.create_task_group() as tg:

            async def watch() -> None:
                async with anyio.create_task_group() as either:
                    for event in (broken, ended):  # a failed call, or the server went away
                        either.start_soon(_then_cancel, event, either.cancel_scope)
                broken.set()
                tg.cancel_scope.cancel()

            async def relist() -> None:
                async for _ in changed:
                    try:
                        await self._list(session, attributes, strict=False)
                    except Exception as exc:
                        logger.warning(
                            "listing the tools of MCP server %r failed: %s",
                            self.server.name,
                            _why(exc),
                        )
                        broken.set()

            tg.start_soon(watch)
            tg.start_soon(relist)
            held, self._held = self._held, []
            for request in held:
                self._dispatch(tg, session, request, broken)
            async for request in self._requests:
                if broken.is_set():  # keep it for the next session: it was never sent
                    self._held.append(request)
                    return
                self._dispatch(tg, session, request, broken)

    def _dispatch(
        self, tg: TaskGroup, session: ClientSession, request: _Call, broken: anyio.Event
    ) -> None:
        if request.scope.cancel_called:  # its caller gave up while it waited
            request.reply.close()
        else:
            tg.start_soon(self._handle, session, request, broken)

    async def _handle(self, session: ClientSession, request: _Call, broken: anyio.Event) -> None:
        from mcp.shared.exceptions import MCPError
        from mcp.types import CONNECTION_CLOSED

        with request.reply:
            outcome: CallToolResult | ToolError
            with request.scope:
                try:
                    outcome = await session.call_tool(request.name, dict(request.arguments))
                except MCPError as exc:
                    if exc.error.code == CONNECTION_CLOSED:
                        broken.set()
                        outcome = MCPServerLost(self._lost())
                    else:
                        outcome = ToolError(
                            f"MCP server {self.server.name!r} answered with error "
                            f"{exc.error.code}: {exc.error.message}"
                        )
                except Exception as exc:  # a result the SDK could not read, say
                    outcome = ToolError(f"MCP server {self.server.name!r}: {_why(exc)}")
                with suppress(anyio.BrokenResourceError, anyio.WouldBlock):
                    request.reply.send_nowait(outcome)

    async def _list(
        self, session: ClientSession, attributes: dict[str, AttributeValue], *, strict: bool
    ) -> None:
        listed = await _list_all(session)
        _check_include(self.server, listed, strict=strict)
        tools: list[Tool[..., object]] = []
        for item in listed:
            if not self.server.keeps(item.name):
                continue
            try:
                tools.append(mcp_tool(self.server, item, self.call, attributes))
            except (ToolError, ConfigError) as exc:
                logger.warning(
                    "MCP server %r: tool %r left out: %s", self.server.name, item.name, exc
                )
        self._tools = tuple(tools)
        self._version += 1
        self._listed.set()
        self._listed = anyio.Event()

    async def _refuse(self) -> None:
        for request in self._held:
            with request.reply:
                request.reply.send_nowait(MCPServerLost(self._gone or self._lost()))
        async for request in self._requests:
            with request.reply:
                request.reply.send_nowait(MCPServerLost(self._gone or self._lost()))

    def _lost(self) -> str:
        return (
            f"the connection to MCP server {self.server.name!r} broke during the call (the "
            "server may have crashed); it is started again for the next call"
        )

    def _not_started(self, exc: BaseException) -> str:
        where = self.server.transport.describe()
        return f"MCP server {self.server.name!r} ({where}) could not be started: {_why(exc)}"


async def _then_cancel(event: anyio.Event, scope: anyio.CancelScope) -> None:
    await event.wait()
    scope.cancel()


async def _list_all(session: ClientSession) -> list[ListedTool]:
    """Every page of ``tools/list``."""
    from mcp.types import PaginatedRequestParams

    listed: list[ListedTool] = []
    cursor: str | None = None
    while True:
        params = None if cursor is None else PaginatedRequestParams(cursor=cursor)
        page = await session.list_tools(params=params)
        listed.extend(page.tools)
        cursor = page.next_cursor
        if cursor is None:
            return listed


def _check_include(server: MCPServer, listed: list[ListedTool], *, strict: bool) -> None:
    """``include`` must name tools the server has: an error at start, a warning later."""
    have = {t.name for t in listed}
    missing = [n for n in server.include or () if n not in have]
    if not missing:
        return
    message = (
        f"MCP server {server.name!r} has no tool {missing[0]!r} (named in include=); "
        f"its tools are: {', '.join(sorted(have)) or '(none)'}"
    )
    if strict:
        raise ConfigError(message)
    logger.warning("%s", message)


def _innermost(exc: BaseException) -> BaseException:
    """The exception inside task-group wrappers that hold just one."""
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    return exc


def _why(exc: BaseException) -> str:
    """The innermost useful message of an exception."""
    exc = _innermost(exc)
    if isinstance(exc, TimeoutError) and not str(exc):
        return "no answer in time (start_timeout)"
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
