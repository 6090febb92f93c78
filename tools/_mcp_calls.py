"""One ``tools/call`` on its way through an MCP connection's owner task.

A caller makes a :class:`Call` and sends it to the owner (see ``_mcp_connection``),
which sends it to the server in a task of its own and answers on the call's one-shot
``reply`` stream. What happens to calls the owner cannot serve is here too.
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable, Container, Coroutine
from contextlib import suppress
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import anyio
from anyio.abc import TaskGroup
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from opentelemetry import context as otel_context
from opentelemetry.context import Context

from regiment._json import JsonObject
from regiment.errors import ToolError
from regiment.tools._mcp_logs import LogBudget
from regiment.tools._mcp_stray import unreadable_text
from regiment.tools._thread import left_running

if TYPE_CHECKING:
    from mcp.client.session import ClientSession
    from mcp.types import CallToolResult
    from mcp.types import Tool as ListedTool

__all__ = (
    "Call",
    "MCPServerLost",
    "answer_of",
    "dispatch",
    "lost",
    "may_run_on",
    "refuse",
    "retry_safe",
    "unreadable",
)


class MCPServerLost(ToolError):
    """The connection to an MCP server broke during a call, or the server is gone."""


@dataclass(eq=False)
class Call:
    """A call of the server's tool ``name``, as its caller made it."""

    name: str
    arguments: JsonObject
    key: str | None
    reply: MemoryObjectSendStream[CallToolResult | ToolError]
    scope: anyio.CancelScope = field(default_factory=anyio.CancelScope)
    # The caller's OpenTelemetry context (its execute_tool span current): the owner task
    # sends the call in it, so the SDK's own client span and the _meta trace context
    # belong to the run's trace, not to whatever the owner task started in.
    context: Context = field(default_factory=otel_context.get_current)
    # All of the caller's context (its run, step and worker too): the server's log
    # messages during the call are logged in it.
    local: contextvars.Context = field(default_factory=contextvars.copy_context)
    logs: LogBudget = field(default_factory=LogBudget)  # of those messages, a minute
    sent: bool = False  # handed to the session: the server may have it (and run on with it)


Handler = Callable[["ClientSession", Call, anyio.Event], Coroutine[object, object, None]]


def dispatch(
    tg: TaskGroup, handle: Handler, session: ClientSession, request: Call, broken: anyio.Event
) -> None:
    """Send ``request`` in a task of ``tg``, unless its caller gave up while it waited."""
    if request.scope.cancel_called:
        request.reply.close()
    else:
        tg.start_soon(handle, session, request, broken)


async def refuse(held: list[Call], requests: MemoryObjectReceiveStream[Call], why: str) -> None:
    """Every call held or still coming fails: the server is gone for good."""
    for request in held:
        lost(request, why)
    async for request in requests:
        lost(request, why)


def lost(request: Call, why: str) -> None:
    """``request`` fails with :class:`MCPServerLost` saying ``why``."""
    with request.reply:
        request.reply.send_nowait(MCPServerLost(why))


def unreadable(server: str, in_flight: set[Call], exc: Exception) -> None:
    """The server sent a message the SDK could not read (JSON nested too deep for its
    parser, say). It may be the answer of any call in flight, and that call would
    wait for it for ever (a tool has no timeout by default): each fails instead."""
    if not in_flight:
        return
    message = unreadable_text(server, exc)
    for request in in_flight:
        with suppress(anyio.BrokenResourceError, anyio.WouldBlock, anyio.ClosedResourceError):
            request.reply.send_nowait(ToolError(message))
        request.scope.cancel()
    in_flight.clear()


async def answer_of(
    request: Call,
    answer: MemoryObjectReceiveStream[CallToolResult | ToolError],
    server: str,
    safe: Container[str],
) -> CallToolResult | ToolError | None:
    """The owner's answer to ``request`` (``None``: it closed the reply unanswered, its
    connection broke). A caller that stops waiting (its timeout, its step's end) stops the
    call in the owner; one sent by then may run on in the server (``may_run_on``), unless
    the server marks its tool safe to repeat (``safe``: the names it marks so)."""
    try:
        return await answer.receive()
    except anyio.EndOfStream:
        return None
    except anyio.get_cancelled_exc_class():
        if request.sent and request.name not in safe:
            may_run_on(server, request.name)
        raise
    finally:
        request.scope.cancel()  # a no-op once answered; else stops the call in the owner


def retry_safe(listed: ListedTool) -> bool:
    """Whether the server marks its tool safe to call again while a call of it may still
    run: it changes nothing (``readOnlyHint``), or a repeat of a call adds nothing
    (``idempotentHint``)."""
    hints = listed.annotations
    return hints is not None and bool(hints.read_only_hint or hints.idempotent_hint)


def may_run_on(server: str, tool: str) -> None:
    """A call sent to ``server`` was cut before its answer (its timeout, as a rule): the
    server was told (``notifications/cancelled``), but no answer says it stopped, and a
    tool running in a thread there cannot be stopped. If the call may be retried, its
    retry is not made: a second call could act beside the first (see ``LeftRunning``)."""
    if (left := left_running.get()) is not None:
        left.unseen(
            f"MCP server {server!r} may still be running it (it was asked to stop, and no "
            "answer says it did), so it was not tried again, as a second call could act "
            f"twice; a tool the server marks readOnlyHint or idempotentHint, unlike "
            f"{tool!r}, is tried again"
        )
