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

``notifications/tools/list_changed`` is counted as it comes off the wire, so a
call's answer is never read before a list change the server sent ahead of it;
such a call returns once the tool list is listed again, so whoever made it (a
step) sees the new list from its next lookup.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from contextlib import suppress
from functools import partial
from typing import TYPE_CHECKING

import anyio
from anyio.abc import TaskStatus
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from opentelemetry import trace
from opentelemetry.util.types import AttributeValue

from regiment._json import JsonObject
from regiment.errors import ConfigError, ToolError
from regiment.telemetry import activated
from regiment.tools._mcp_calls import (
    Call,
    MCPServerLost,
    answer_of,
    dispatch,
    refuse,
    retry_safe,
    unreadable,
)
from regiment.tools._mcp_http_answers import Refusals
from regiment.tools._mcp_listing import Listings, list_again
from regiment.tools._mcp_logs import ServerLogs
from regiment.tools._mcp_restarts import Restarts, not_started
from regiment.tools._mcp_server import MCPServer
from regiment.tools._mcp_stray import StrayOutput
from regiment.tools._mcp_tools import check_include, list_all, mcp_tools, unlisted
from regiment.tools._mcp_transport import (
    failure_text,
    innermost,
    note_request_ids,
    open_session,
    request_meta,
    span_attributes,
    started,
    starting,
    traced,
)
from regiment.tools._tool import Tool

if TYPE_CHECKING:
    from mcp.client.session import ClientSession, IncomingMessage
    from mcp.types import CallToolResult

__all__ = ("IDEMPOTENCY_META_KEY", "MCPConnection", "MCPServerLost")

logger = logging.getLogger("regiment.tools.mcp")

IDEMPOTENCY_META_KEY = "regiment/idempotency_key"
"""The ``_meta`` key of a ``tools/call`` that carries the call's idempotency key."""


class MCPConnection:
    """The live connection to one :class:`MCPServer` in a running team.

    Start :meth:`run` with ``await task_group.start(connection.run)``: it returns
    once the server is up and its tools are listed. Cancel the task group to
    close the session and stop the server.
    """

    def __init__(self, server: MCPServer, tracer: trace.Tracer | None = None) -> None:
        self.server = server
        # Opens each call's CLIENT span (the team's tracer); None: the global provider's.
        self._tracer = tracer or trace.get_tracer("regiment")
        self._attributes: dict[str, AttributeValue] = {}  # the calls' mcp.*/network.*
        # Unbounded on purpose: a caller must never block on the owner, whose only
        # work per request is to start one task.
        self._send, self._requests = anyio.create_memory_object_stream[Call](math.inf)
        self._tools: tuple[Tool[..., object], ...] = ()
        self._version = 0
        self._restarts = Restarts(server)
        self._noticed = 0  # tools/list_changed notifications seen, counted in wire order
        self._covered = 0  # how many of them the current list reflects
        self._gone: str | None = None
        self._held: list[Call] = []  # taken from the stream after the session broke
        self._in_flight: set[Call] = set()  # sent to the server, not answered yet
        self._listed = anyio.Event()
        self._refusals = Refusals()  # the server's error statuses
        self._listings = Listings(server)  # tools the SDK could not read, left out
        self._names: frozenset[str] = frozenset()  # the server-side names last listed
        self._retry_safe: frozenset[str] = frozenset()  # of them, those marked safe to repeat
        self._stray = StrayOutput(server)  # stdout lines that are no MCP message
        self._logs = ServerLogs(server.name, self._in_flight)  # its log messages, logged

    @property
    def tools(self) -> tuple[Tool[..., object], ...]:
        """The server's tools as last listed (filtered and prefixed)."""
        return self._tools

    @property
    def left_out(self) -> dict[str, str]:
        """The listed tools that cannot be used (name → why: unreadable, a bad schema)."""
        return dict(self._listings.left_out)

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
        return self._restarts.used

    async def call(
        self, name: str, arguments: JsonObject, key: str | None = None
    ) -> CallToolResult:
        """Call the server's tool ``name`` (its own, unprefixed name) through the owner;
        ``key``, the call's idempotency key, goes in the request's ``_meta`` (under
        :data:`IDEMPOTENCY_META_KEY`). A list change the server sent before it answered
        is waited out: this returns once the list is refreshed (at most ``start_timeout``).

        Raises:
            MCPServerLost: the connection broke during the call, or the server is stopped.
            ToolError: the server answered with a protocol error, or no longer lists ``name``.
        """
        if self._gone is not None:
            raise MCPServerLost(self._gone)
        if self._version and name not in self._names:  # a step looked it up before a change
            unlisted(self.server, name, None)
        return await traced(self._tracer, name, self._attributes, self._call(name, arguments, key))

    async def _call(self, name: str, arguments: JsonObject, key: str | None) -> CallToolResult:
        reply: MemoryObjectSendStream[CallToolResult | ToolError]
        answer: MemoryObjectReceiveStream[CallToolResult | ToolError]
        reply, answer = anyio.create_memory_object_stream(1)
        request = Call(name, arguments, key, reply)  # in the caller's context (see Call)
        with answer:
            try:
                self._send.send_nowait(request)
            except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                reply.close()
                raise MCPServerLost(f"MCP server {self.server.name!r} is stopped") from None
            outcome = await answer_of(request, answer, self.server.name, self._retry_safe)
        if outcome is None:  # the owner closed the call's reply: the connection broke
            raise MCPServerLost(self._gone or self._restarts.lost_mid_call())
        if self._covered < self._noticed:
            await self._settled()
        if name not in self._names and not isinstance(outcome, MCPServerLost):
            unlisted(self.server, name, outcome)  # its tool list changed since
        if isinstance(outcome, ToolError):
            raise outcome
        return outcome

    async def _settled(self) -> None:
        """Wait until the tool list reflects every list change noticed so far."""
        wanted = self._noticed
        with anyio.move_on_after(self.server.start_timeout) as scope:
            while self._covered < wanted and self._gone is None:
                await self._listed.wait()
        if scope.cancelled_caught:
            logger.warning("MCP server %r did not list its changed tools in time", self.server.name)

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
                listed = self._version  # goes up once a session is up (its tools listed)
                try:
                    await self._lifetime(on_ready)
                    reason = "it closed the connection"
                except Exception as exc:  # the SDK's task groups may wrap it in a group
                    inner = innermost(exc)
                    if not ready:
                        if isinstance(inner, ConfigError):
                            raise inner from None
                        why = failure_text(inner, self.server.start_timeout)
                        raise ToolError(not_started(self.server, why)) from exc
                    reason = failure_text(inner)
                wait = self._restarts.after_loss(reason, was_up=self._version > listed)
                if isinstance(wait, str):
                    self._gone = wait
                    self._listed.set()  # calls waiting for a refreshed list stop waiting
                    await refuse(self._held, self._requests, wait)
                    return
                await anyio.sleep(wait)

    async def _lifetime(self, on_ready: Callable[[], None]) -> None:
        """One session from start to a broken connection (or cancellation)."""
        changed_send, changed = anyio.create_memory_object_stream[None](1)

        def tools_changed() -> None:  # called as the notification comes off the wire
            self._noticed += 1
            with suppress(anyio.WouldBlock, anyio.BrokenResourceError, anyio.ClosedResourceError):
                changed_send.send_nowait(None)  # one pending relist covers any number

        async def on_message(message: IncomingMessage) -> None:
            if isinstance(message, Exception):
                logger.debug("MCP server %r transport: %r", self.server.name, message)
                if not self._stray.ignored(message):  # a print() can be no call's answer
                    unreadable(self.server.name, self._in_flight, message)

        ended = anyio.Event()
        with changed_send, changed, self._logs:  # the logs: what was dropped is said
            seen: dict[str, AttributeValue] = {}  # mcp.session.id, over HTTP
            hooks = (self._refusals, seen, self._listings, self._logs)
            opened = open_session(self.server, on_message, ended, tools_changed, *hooks)
            async with opened as session:
                start = starting(self._tracer, self.server, self._restarts.used)
                with start as span, anyio.fail_after(self.server.start_timeout):
                    initialized = await session.initialize()
                    version = initialized.protocol_version
                    self._attributes = attributes = span_attributes(self.server, version) | seen
                    await self._list(session, attributes, strict=True)
                    started(span, attributes, len(self._tools))
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
                    listing = partial(self._list, session, attributes, strict=False)
                    if not await list_again(self.server, listing, self._old_list_stands):
                        broken.set()  # the connection closed: restart it

            tg.start_soon(watch)
            tg.start_soon(relist)
            held, self._held = self._held, []
            for request in held:
                dispatch(tg, self._handle, session, request, broken)
            async for request in self._requests:
                if broken.is_set():  # keep it for the next session: it was never sent
                    self._held.append(request)
                    return
                dispatch(tg, self._handle, session, request, broken)

    async def _handle(self, session: ClientSession, request: Call, broken: anyio.Event) -> None:
        with request.reply:
            outcome: CallToolResult | ToolError
            self._in_flight.add(request)
            refused = self._refusals.count
            with request.scope, activated(request.context):
                note_request_ids(trace.get_current_span())  # the call's CLIENT span, if traced
                try:
                    meta = request_meta(request.context, request.key, IDEMPOTENCY_META_KEY)
                    request.sent = True
                    outcome = await session.call_tool(
                        request.name, dict(request.arguments), meta=meta
                    )
                except Exception as exc:
                    outcome = _failed(self.server, self._refusals, refused, exc)
                    if isinstance(outcome, MCPServerLost):
                        broken.set()
                        outcome = MCPServerLost(self._restarts.lost_mid_call())
                with suppress(anyio.BrokenResourceError, anyio.WouldBlock):
                    request.reply.send_nowait(outcome)
            self._in_flight.discard(request)
            self._logs.ended(request)

    def _old_list_stands(self) -> None:
        """A new list could not be had: calls waiting for it go on with the one listed."""
        self._covered = self._noticed
        self._listed.set()
        self._listed = anyio.Event()

    async def _list(
        self, session: ClientSession, attributes: dict[str, AttributeValue], *, strict: bool
    ) -> None:
        covers = self._noticed  # a list asked for now reflects every change noticed so far
        listed, left_out = await list_all(session), self._listings.left_out
        check_include(self.server, listed, left_out, strict=strict)
        self._tools = mcp_tools(self.server, listed, self.call, attributes, left_out)
        self._names = frozenset(tool.name for tool in listed) | frozenset(left_out)
        self._retry_safe = frozenset(tool.name for tool in listed if retry_safe(tool))
        self._covered = max(self._covered, covers)
        self._version += 1
        self._listed.set()
        self._listed = anyio.Event()


def _failed(server: MCPServer, refusals: Refusals, refused: int, exc: Exception) -> ToolError:
    """What a call that raised ``exc`` ends as: :class:`MCPServerLost` (the connection
    closed), or the server's protocol error, or a result the SDK could not read."""
    from mcp.shared.exceptions import MCPError
    from mcp.types import CONNECTION_CLOSED

    if isinstance(exc, MCPError) and exc.error.code == CONNECTION_CLOSED:
        return MCPServerLost(str(exc))
    if isinstance(exc, MCPError):
        failed = ToolError(refusals.call_error(server, refused, exc))
        failed.__cause__ = exc  # its code: the CLIENT span's error.type
        return failed
    return ToolError(f"MCP server {server.name!r}: {failure_text(exc)}")


async def _then_cancel(event: anyio.Event, scope: anyio.CancelScope) -> None:
    await event.wait()
    scope.cancel()
