"""Opening an MCP client session over stdio or streamable HTTP (the ``mcp`` SDK's transports).

Everything here is entered and exited by the connection's owner task.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping
from contextlib import AsyncExitStack, asynccontextmanager, contextmanager
from typing import TYPE_CHECKING, cast
from urllib.parse import urlsplit

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator
from opentelemetry.util.types import AttributeValue

from regiment._text import clipped
from regiment.tools._mcp_guard import guarded
from regiment.tools._mcp_server import HttpTransport, MCPServer, StdioTransport

if TYPE_CHECKING:
    import httpx2
    from mcp.client import Transport
    from mcp.client._transport import TransportStreams
    from mcp.client.session import ClientSession, MessageHandlerFnT
    from mcp.shared._stream_protocols import ReadStream
    from mcp.shared.message import SessionMessage
    from mcp.types import CallToolResult, RequestParamsMeta

__all__ = (
    "attached",
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


@asynccontextmanager
async def open_session(
    server: MCPServer,
    on_message: MessageHandlerFnT,
    ended: anyio.Event,
    tools_changed: Callable[[], None],
    seen: dict[str, AttributeValue] | None = None,
) -> AsyncIterator[ClientSession]:
    """A client session to ``server``, not yet initialized; closing it stops the server
    (stdio: close stdin, wait 2 s, SIGTERM the process group, SIGKILL 2 s later).

    ``ended`` is set when the server's side of the connection ends (a stdio server
    exited, say), so the owner can restart it before the next call, not during it.
    ``tools_changed`` is called for each ``notifications/tools/list_changed`` before
    the session sees any later message (the SDK hands notifications to a task of
    their own, which may run after the answer that followed them on the wire).
    ``seen`` gets the ``mcp.session.id`` an HTTP server gives the session.
    """
    await _load_sdk(server)
    from mcp.client.session import ClientSession
    from mcp.types import Implementation

    async with AsyncExitStack() as stack:
        transport = server.transport
        if isinstance(transport, StdioTransport):
            read, write = await stack.enter_async_context(_stdio(transport))
        else:
            read, write = await stack.enter_async_context(_http(transport, seen))
        pump = await stack.enter_async_context(anyio.create_task_group())
        stack.callback(pump.cancel_scope.cancel)  # runs first on exit: the pump never ends alone
        forward: MemoryObjectSendStream[SessionMessage | Exception]
        received: MemoryObjectReceiveStream[SessionMessage | Exception]
        forward, received = anyio.create_memory_object_stream(0)
        pump.start_soon(_forward, read, forward, ended, tools_changed)
        info = Implementation(name="regiment", version="0.1.0")
        session = ClientSession(received, write, message_handler=on_message, client_info=info)
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
    forward: MemoryObjectSendStream[SessionMessage | Exception],
    ended: anyio.Event,
    tools_changed: Callable[[], None],
) -> None:
    """Pass the server's messages on to the session, and note list changes and the end."""
    from mcp.types.jsonrpc import JSONRPCNotification

    with forward:
        async for item in read:
            message = getattr(item, "message", None)
            if isinstance(message, JSONRPCNotification) and message.method == _TOOLS_CHANGED:
                tools_changed()
            await forward.send(item)
    ended.set()


def _stdio(transport: StdioTransport) -> Transport:
    """The SDK's stdio transport, the server guarded against outliving this process."""
    from mcp.client.stdio import StdioServerParameters, get_default_environment, stdio_client

    env = None if transport.env is None else dict(transport.env)
    command, args = guarded(
        transport.command, transport.args, get_default_environment() | (env or {}), transport.cwd
    )
    params = StdioServerParameters(command=command, args=args, env=env, cwd=transport.cwd)
    return stdio_client(params, errlog=sys.stderr)


def _http(transport: HttpTransport, seen: dict[str, AttributeValue] | None) -> Transport:
    return _http_streams(transport, {} if seen is None else seen)


@asynccontextmanager
async def _http_streams(
    transport: HttpTransport, seen: dict[str, AttributeValue]
) -> AsyncIterator[TransportStreams]:
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    refused: list[httpx2.Response] = []

    async def note(response: httpx2.Response) -> None:
        session_id = response.headers.get("mcp-session-id")
        if session_id:  # the MCP conventions' mcp.session.id, on the calls' CLIENT spans
            seen["mcp.session.id"] = session_id
        if response.status_code in (401, 403):
            refused.append(response)

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
        if not refused:
            raise
        # The SDK says only "Server returned an error response"; the status says what to do.
        raise PermissionError(_refusal(transport, refused[-1])) from exc


def _refusal(transport: HttpTransport, response: httpx2.Response) -> str:
    """What a server that refused our credentials (401, 403) means for the user."""
    said = f"the server answered HTTP {response.status_code} {response.reason_phrase}"
    challenge = response.headers.get("www-authenticate")
    if challenge:
        said += f" (WWW-Authenticate: {clipped(challenge, 200)})"
    if response.status_code == 403:
        return f"{said}: the credentials sent are not accepted; check the headers= given"
    given = ", ".join(sorted(transport.headers)) or "none"
    return (
        f"{said}: it wants credentials; give them in headers= (headers sent: {given}), "
        'e.g. headers={"Authorization": "Bearer ..."}'
    )


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
        try:
            result = await call
        except anyio.get_cancelled_exc_class():
            span.set_attribute("regiment.cancelled", True)
            span.add_event("regiment.cancelled")
            raise
        except Exception as exc:
            span.set_attribute("error.type", f"{type(exc).__module__}.{type(exc).__qualname__}")
            span.set_status(trace.StatusCode.ERROR)
            raise
        if result.is_error:
            span.set_attribute("error.type", "tool_error")
            span.set_status(trace.StatusCode.ERROR)
        return result


def request_meta(context: Context, key: str | None, key_name: str) -> RequestParamsMeta | None:
    """A ``tools/call``'s ``_meta``: the call's idempotency key (under ``key_name``), for
    the server to deduplicate, and the W3C trace context (``traceparent``, ``tracestate``)
    of ``context`` (the call's CLIENT span, when traced), as the OpenTelemetry MCP
    conventions carry it, so a traced server's spans join the run's trace."""
    meta: dict[str, str] = {}
    _W3C.inject(meta, context=context)
    if key is not None:
        meta[key_name] = key
    return cast("RequestParamsMeta", meta) if meta else None


_W3C = TraceContextTextMapPropagator()


@contextmanager
def attached(context: Context) -> Iterator[None]:
    """``context`` current for the block (the caller's, in the owner task)."""
    token = otel_context.attach(context)
    try:
        yield
    finally:
        otel_context.detach(token)


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
    with tracer.start_as_current_span(
        f"regiment.mcp.start {server.name}",
        attributes=attributes,
        record_exception=False,
        set_status_on_exception=False,
    ) as span:
        try:
            yield span
        except anyio.get_cancelled_exc_class():
            span.set_attribute("regiment.cancelled", True)
            span.add_event("regiment.cancelled")
            raise
        except Exception as exc:
            span.set_attribute("error.type", f"{type(exc).__module__}.{type(exc).__qualname__}")
            span.set_status(trace.StatusCode.ERROR)
            raise


def started(span: trace.Span, attributes: Mapping[str, AttributeValue], tools: int) -> None:
    """What a started session's span says: the protocol version, the transport, and how
    many tools it gives (``include``/``exclude`` applied)."""
    if span.is_recording():
        span.set_attributes({k: v for k, v in attributes.items() if k != "mcp.method.name"})
        span.set_attribute("regiment.mcp.tools", tools)
