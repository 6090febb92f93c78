"""Opening an MCP client session over stdio or streamable HTTP (the ``mcp`` SDK's transports).

Everything here is entered and exited by the connection's owner task.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping
from contextlib import AsyncExitStack, asynccontextmanager, contextmanager
from contextvars import ContextVar
from types import TracebackType
from typing import TYPE_CHECKING, cast
from urllib.parse import urlsplit

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.util.types import AttributeValue

from regiment.telemetry import context_headers, error_type, record_cancellation
from regiment.tools._mcp_guard import stdio_transport
from regiment.tools._mcp_http_answers import Refusals
from regiment.tools._mcp_listing import Listings
from regiment.tools._mcp_logs import Noted, ServerLogs, WireContexts
from regiment.tools._mcp_server import HttpTransport, MCPServer, StdioTransport

if TYPE_CHECKING:
    import httpx2
    from mcp.client._transport import TransportStreams
    from mcp.client.session import ClientSession, MessageHandlerFnT
    from mcp.shared._stream_protocols import ReadStream, WriteStream
    from mcp.shared.message import SessionMessage
    from mcp.types import CallToolResult, RequestParamsMeta

__all__ = (
    "failure_text",
    "innermost",
    "note_request_ids",
    "open_session",
    "request_meta",
    "span_attributes",
    "started",
    "starting",
    "traced",
)

# Reads may wait long on a slow tool; the tool's own timeout is what bounds a call.
_CONNECT_TIMEOUT = 30.0
_READ_TIMEOUT = 300.0
_TOOLS_CHANGED = "notifications/tools/list_changed"
_LOGGED = "notifications/message"

# The CLIENT span of the tools/call a task sends, if traced: the session's write stream
# notes the JSON-RPC id the SDK gives the request on it (the SDK chooses the id as it
# writes, in the task that calls, and says it nowhere else).
_CALL_SPAN: ContextVar[trace.Span | None] = ContextVar("regiment_mcp_call_span", default=None)


def note_request_ids(span: trace.Span) -> None:
    """Put the JSON-RPC id of the ``tools/call`` this task sends next on ``span``
    (``jsonrpc.request.id``, as the OpenTelemetry MCP conventions ask). Call it in the
    task that sends the request, which must be a task of its own: the note stays set
    for the rest of the task."""
    if span.is_recording():
        _CALL_SPAN.set(span)


@asynccontextmanager
async def open_session(
    server: MCPServer,
    on_message: MessageHandlerFnT,
    ended: anyio.Event,
    tools_changed: Callable[[], None],
    refusals: Refusals,
    seen: dict[str, AttributeValue] | None = None,
    listings: Listings | None = None,
    logs: ServerLogs | None = None,
) -> AsyncIterator[ClientSession]:
    """A client session to ``server``, not yet initialized; closing it stops the server
    (stdio: close stdin, wait 2 s, SIGTERM the process group, SIGKILL 2 s later).

    ``ended`` is set when the server's side of the connection ends (a stdio server
    exited, say), so the owner can restart it before the next call, not during it.
    ``tools_changed`` is called for each ``notifications/tools/list_changed`` before
    the session sees any later message (the SDK hands notifications to a task of
    their own, which may run after the answer that followed them on the wire).
    ``refusals`` counts the HTTP 401 and 403 answers the session gets; ``seen`` gets the
    ``mcp.session.id`` an HTTP server gives the session. ``listings`` takes out of each
    ``tools/list`` answer the tools the SDK would refuse (see :class:`Listings`);
    ``logs`` gets the server's log messages (see :class:`ServerLogs`).
    """
    await _load_sdk(server)
    from mcp.client.session import ClientSession
    from mcp.types import Implementation

    async with AsyncExitStack() as stack:
        transport = server.transport
        if isinstance(transport, StdioTransport):
            read, write = await stack.enter_async_context(stdio_transport(transport))
        else:
            streams = _http_streams(transport, refusals, {} if seen is None else seen)
            read, write = await stack.enter_async_context(streams)
        listings = listings or Listings(server)
        write = _NotedWrites(write, listings)
        pump = await stack.enter_async_context(anyio.create_task_group())
        stack.callback(pump.cancel_scope.cancel)  # runs first on exit: the pump never ends alone
        forward: MemoryObjectSendStream[Noted]
        received: MemoryObjectReceiveStream[Noted]
        forward, received = anyio.create_memory_object_stream(0)
        pump.start_soon(_forward, read, forward, ended, tools_changed, listings, logs)
        info = Implementation(name="regiment", version="0.1.0")
        session = ClientSession(
            WireContexts(received),
            write,
            logging_callback=None if logs is None else logs.received,
            message_handler=on_message,
            client_info=info,
        )
        yield await stack.enter_async_context(session)


async def _load_sdk(server: MCPServer) -> None:
    """Import the SDK's client in a worker thread the first time: it takes about half a
    second, which on the event loop would stall every run and request sharing it."""
    stdio = isinstance(server.transport, StdioTransport)
    transport = "mcp.client.stdio" if stdio else "mcp.client.streamable_http"
    modules = ["mcp.client.session", transport, "jsonschema"]  # jsonschema: the tools' schemas
    missing = [name for name in modules if name not in sys.modules]
    if missing:
        await anyio.to_thread.run_sync(lambda: [importlib.import_module(m) for m in missing])


async def _forward(
    read: ReadStream[SessionMessage | Exception],
    forward: MemoryObjectSendStream[Noted],
    ended: anyio.Event,
    tools_changed: Callable[[], None],
    listings: Listings,
    logs: ServerLogs | None,
) -> None:
    """Pass the server's messages on to the session, and note list changes, the calls in
    flight as a log message comes, and the end."""
    from mcp.types.jsonrpc import JSONRPCNotification

    with forward:
        async for item in read:
            message = getattr(item, "message", None)
            context = None
            if isinstance(message, JSONRPCNotification) and message.method == _TOOLS_CHANGED:
                tools_changed()
            elif isinstance(message, JSONRPCNotification) and message.method == _LOGGED and logs:
                context = logs.wire_context()
            listings.received(item)
            await forward.send((context, item))
    ended.set()


class _NotedWrites:
    """The session's write stream, noting each ``tools/call``'s JSON-RPC id on the
    CLIENT span of the task that sends it (see :func:`note_request_ids`), and the
    requests whose answers ``listings`` looks at."""

    def __init__(self, write: WriteStream[SessionMessage], listings: Listings) -> None:
        self._write = write
        self._listings = listings

    async def send(self, item: SessionMessage, /) -> None:
        message = item.message
        method, params = getattr(message, "method", None), getattr(message, "params", None)
        self._listings.sent(method, getattr(message, "id", None), params)
        span = _CALL_SPAN.get()
        if span is not None and method == "tools/call":
            request_id = getattr(message, "id", None)
            if request_id is not None:
                span.set_attribute("jsonrpc.request.id", str(request_id))
        await self._write.send(item)

    async def aclose(self) -> None:
        await self._write.aclose()

    async def __aenter__(self) -> _NotedWrites:
        await self._write.__aenter__()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc_val: BaseException | None,
        exc_tb: TracebackType | None,
    ) -> bool | None:
        return await self._write.__aexit__(exc_type, exc_val, exc_tb)


@asynccontextmanager
async def _http_streams(
    transport: HttpTransport, refusals: Refusals, seen: dict[str, AttributeValue]
) -> AsyncIterator[TransportStreams]:
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    mark, failed = refusals.count, refusals.failures

    async def note(response: httpx2.Response) -> None:
        session_id = response.headers.get("mcp-session-id")
        if session_id:  # the MCP conventions' mcp.session.id, on the calls' CLIENT spans
            seen["mcp.session.id"] = session_id
        version = response.http_version.removeprefix("HTTP/")
        if version:  # "1.1", "2": network.protocol.version
            seen["network.protocol.version"] = version
        await refusals.note(response)

    timeout = httpx2.Timeout(_CONNECT_TIMEOUT, read=_READ_TIMEOUT)
    hooks = {"response": [note]}
    try:
        async with (
            httpx2.AsyncClient(
                headers=dict(transport.headers), timeout=timeout, event_hooks=hooks
            ) as client,
            streamable_http_client(transport.url, http_client=client) as streams,
        ):
            yield streams
    except Exception as exc:
        # The SDK says only "Server returned an error response"; the status says what to do.
        told = refusals.start_failure(transport, mark, failed, innermost(exc))
        if told is None:
            raise
        raise told from exc


def span_attributes(server: MCPServer, protocol_version: str | None) -> dict[str, AttributeValue]:
    """The OpenTelemetry MCP semantic-convention attributes for calls to ``server``."""
    attributes: dict[str, AttributeValue] = {
        "mcp.method.name": "tools/call",
        "regiment.mcp.server": server.name,
    }
    if protocol_version is not None:
        attributes["mcp.protocol.version"] = protocol_version
    transport = server.transport
    if isinstance(transport, StdioTransport):
        attributes["network.transport"] = "pipe"
        return attributes
    parts = urlsplit(transport.url)
    attributes["network.transport"] = "tcp"
    attributes["network.protocol.name"] = "http"
    if parts.hostname:
        attributes["server.address"] = parts.hostname
    if parts.port:
        attributes["server.port"] = parts.port
    return attributes


async def traced(
    tracer: trace.Tracer,
    tool: str,
    attributes: Mapping[str, AttributeValue],
    call: Awaitable[CallToolResult],
) -> CallToolResult:
    """Await ``call`` (one ``tools/call`` request) in its CLIENT span, as the OpenTelemetry
    MCP conventions name it (``tools/call {tool}``), current while the request is sent, so
    the ``_meta`` trace context names it. A failed call, or a result marked ``isError``,
    has ``error.type``; a cancelled one ``regiment.cancelled`` (as every span a
    cancellation cut short), not an error. Tracing off (the caller's span does not
    record): no span, no cost."""
    if not trace.get_current_span().is_recording():
        return await call
    with tracer.start_as_current_span(
        f"tools/call {tool}",
        kind=trace.SpanKind.CLIENT,
        attributes={
            **attributes,
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": tool,
        },
        record_exception=False,
        set_status_on_exception=False,
    ) as span:
        with _marked(span):
            result = await call
        if result.is_error:
            span.set_attribute("error.type", "tool_error")
            span.set_status(trace.StatusCode.ERROR)
        return result


@contextmanager
def _marked(span: trace.Span) -> Iterator[None]:
    """Mark ``span`` as cut (``regiment.cancelled``) or failed (``error.type``, the
    exception's qualified type) by what leaves the block, and let it through."""
    try:
        yield
    except anyio.get_cancelled_exc_class() as exc:
        record_cancellation(span, exc)
        raise
    except Exception as exc:
        code = _answered_code(exc)
        if code is None:
            span.set_attribute("error.type", error_type(exc))
        else:  # the conventions' words for a call the server answered with an error
            span.set_attributes({"error.type": code, "rpc.response.status_code": code})
        span.set_status(trace.StatusCode.ERROR)
        raise


def _answered_code(exc: Exception) -> str | None:
    """The JSON-RPC error code the server answered a call with, when that is what ``exc``
    (a ``ToolError`` raised from the SDK's ``MCPError``) says; else ``None``."""
    cause = exc.__cause__
    code = getattr(cause, "code", None)
    if cause is None or not isinstance(code, int) or code == _CLOSED:
        return None
    from mcp.shared.exceptions import MCPError  # loaded: a call was made

    return str(code) if isinstance(cause, MCPError) else None


def request_meta(context: Context, key: str | None, key_name: str) -> RequestParamsMeta | None:
    """A ``tools/call``'s ``_meta``: the call's idempotency key (under ``key_name``), for
    the server to deduplicate, and the W3C trace context (``traceparent``, ``tracestate``)
    of ``context`` (the call's CLIENT span, when traced), as the OpenTelemetry MCP
    conventions carry it, so a traced server's spans join the run's trace."""
    meta = context_headers(context)
    if key is not None:
        meta[key_name] = key
    return cast("RequestParamsMeta", meta) if meta else None


@contextmanager
def starting(tracer: trace.Tracer, server: MCPServer, restart: int) -> Iterator[trace.Span]:
    """The span of one session's start, ``regiment.mcp.start {server}``: the handshake
    (``initialize``) and the first ``tools/list``, the MCP SDK's own spans of them inside
    (they would each be a trace of their own). It is a trace of its own (a team's start is
    no run's), unless a span was current where the team started. A server that did not
    start has ``error.type``; ``regiment.mcp.restart`` counts the restarts before it."""
    attributes: dict[str, AttributeValue] = {
        "regiment.mcp.server": server.name,
        "regiment.mcp.restart": restart,
    }
    with (
        tracer.start_as_current_span(
            f"regiment.mcp.start {server.name}",
            attributes=attributes,
            record_exception=False,
            set_status_on_exception=False,
        ) as span,
        _marked(span),
    ):
        yield span


def started(span: trace.Span, attributes: Mapping[str, AttributeValue], tools: int) -> None:
    """What a started session's span says: the protocol version, the transport, and how
    many tools it gives (``include``/``exclude`` applied)."""
    if span.is_recording():
        span.set_attributes({k: v for k, v in attributes.items() if k != "mcp.method.name"})
        span.set_attribute("regiment.mcp.tools", tools)


_CLOSED = -32000  # mcp.types.CONNECTION_CLOSED, without importing the SDK here


def innermost(exc: BaseException) -> BaseException:
    """The exception inside task-group wrappers that hold just one."""
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    return exc


def failure_text(exc: BaseException, start_timeout: float | None = None) -> str:
    """The innermost useful message of an exception (with the ``start_timeout`` of a
    server that did not start, what to do about it)."""
    exc = innermost(exc)
    if isinstance(exc, TimeoutError) and not str(exc):
        if start_timeout is None:
            return "no answer in time (start_timeout)"
        return (
            f"it did not start and list its tools within start_timeout={start_timeout:g}s; "
            "raise start_timeout for a server that starts slowly"
        )
    text = str(exc)
    if start_timeout is not None and getattr(exc, "code", None) == _CLOSED:  # the SDK's MCPError
        return (
            "it closed the connection before it was up (a stdio server that exited, or that "
            "wrote something other than MCP messages to stdout: see what it wrote to stderr)"
        )
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
