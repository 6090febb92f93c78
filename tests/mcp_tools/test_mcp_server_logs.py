"""What an MCP server logs during a call (``ctx.info(...)``, ``notifications/message``)
reaches the ``regiment.tools.mcp.server`` logger, over stdio and HTTP: the MCP level as
logging's, the server's and the tool's names, in the run's log context and trace, its
text shown (control characters escaped, a long one cut), a flood bounded. The SDK's
client dropped them all."""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Awaitable, Callable, Iterator
from functools import partial
from typing import cast

import anyio
import pytest
from anyio.abc import SocketAttribute, SocketListener
from opentelemetry.sdk.trace import TracerProvider

from regiment.hierarchy import RunContextFilter
from regiment.models import ModelRequest, ModelResponse, ToolResultPart, tool_call_response
from regiment.telemetry import SpanCollector, Telemetry
from regiment.tools import MCPHub, MCPServer, Toolset

from .brain import plan_json
from .conftest import SDK_HTTP_LEAKS, SERVER_COMMAND
from .test_mcp_team import team_of

pytestmark = [pytest.mark.anyio, *SDK_HTTP_LEAKS]

LOGGER = "regiment.tools.mcp.server"


@pytest.fixture(params=["stdio", "http"])
def server(request: pytest.FixtureRequest) -> MCPServer:
    if request.param == "stdio":
        return MCPServer.stdio(SERVER_COMMAND, name="chat", prefix="c_")
    return MCPServer.http(request.getfixturevalue("http_url"), name="chat", prefix="c_")


class _Kept(logging.Handler):
    """Keeps the records of the server-log logger, the run context filled in as a
    handler of ``regiment run -v`` gets it."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []
        self.addFilter(RunContextFilter())

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.fixture
def kept() -> Iterator[_Kept]:
    handler, log = _Kept(), logging.getLogger(LOGGER)
    old = log.level
    log.addHandler(handler)
    log.setLevel(logging.DEBUG)
    try:
        yield handler
    finally:
        log.removeHandler(handler)
        log.setLevel(old)


async def test_a_calls_log_messages_are_logged_at_their_level_naming_server_and_tool(
    server: MCPServer, kept: _Kept
) -> None:
    async with MCPHub.open() as hub:
        tools = (await hub.worker_tools(Toolset("w"), [server])).current()
        for level in ("debug", "notice", "warning", "error", "alert"):
            said = await tools.call(
                "c_chatty", {"text": f"at {level}", "level": level}, call_id="c"
            )
            assert said.content == {"result": "logged 1"}
        await tools.call("c_chatty", {"text": "cache warm", "logger": "cache"}, call_id="c")
        await tools.call("c_log_object", {}, call_id="c")
    levels = [(r.levelno, r.getMessage()) for r in kept.records]
    assert levels == [
        (logging.DEBUG, "MCP server 'chat' during tool chatty: at debug"),
        (logging.INFO, "MCP server 'chat' during tool chatty: at notice"),
        (logging.WARNING, "MCP server 'chat' during tool chatty: at warning"),
        (logging.ERROR, "MCP server 'chat' during tool chatty: at error"),
        (logging.CRITICAL, "MCP server 'chat' during tool chatty: at alert"),
        (logging.INFO, "MCP server 'chat' [cache] during tool chatty: cache warm"),
        (
            logging.WARNING,
            'MCP server \'chat\' during tool log_object: {"disk": "full", "free": 0}',
        ),
    ]
    first = kept.records[0]
    assert (first.mcp_server, first.mcp_tool, first.mcp_level) == ("chat", "chatty", "debug")  # type: ignore[attr-defined]
    assert kept.records[5].mcp_logger == "cache"  # type: ignore[attr-defined]


async def test_a_servers_text_is_shown_escaped_and_cut(server: MCPServer, kept: _Kept) -> None:
    forged = "done\n2026-01-01 ERROR regiment.run: forged\x1b[2J\x07"
    async with MCPHub.open() as hub:
        tools = (await hub.worker_tools(Toolset("w"), [server])).current()
        await tools.call(
            "c_chatty", {"text": forged, "level": "warning", "logger": "a\nb"}, call_id="c"
        )
        await tools.call("c_chatty", {"text": "y" * 10_000}, call_id="c")
    escaped, cut = (r.getMessage() for r in kept.records)
    assert escaped == (
        "MCP server 'chat' [a\\nb] during tool chatty: "
        "done\\n2026-01-01 ERROR regiment.run: forged\\x1b[2J\\x07"
    )
    assert cut.endswith("y... (10,000 characters in all)")
    assert len(cut) < 2_100


async def test_a_flood_is_bounded_and_what_was_dropped_is_said(
    server: MCPServer, kept: _Kept
) -> None:
    async with MCPHub.open() as hub:
        tools = (await hub.worker_tools(Toolset("w"), [server])).current()
        said = await tools.call("c_chatty", {"text": "tick", "count": 250}, call_id="c")
        assert said.content == {"result": "logged 250"}
        await tools.call(
            "c_chatty", {"text": "after"}, call_id="c"
        )  # a new call has its own allowance
    messages = [r.getMessage() for r in kept.records]
    assert messages[:2] == [
        "MCP server 'chat' during tool chatty: tick",
        "MCP server 'chat' during tool chatty: tick 1",
    ]
    assert messages[99] == "MCP server 'chat' during tool chatty: tick 99"
    assert messages[100] == (
        "MCP server 'chat' sent 150 log messages during tool chatty that were not logged: "
        "at most 100 a minute are (a server that logs this much should log less, or to its "
        "own file)"
    )
    assert kept.records[100].levelno == logging.WARNING
    assert messages[101:] == ["MCP server 'chat' during tool chatty: after"]


async def during_a_hang(
    server: MCPServer,
    busy: Callable[[Toolset], Awaitable[object]],
    after: Callable[[Toolset], Awaitable[object]] | None = None,
) -> None:
    """``server`` in a hub of its own: ``busy(tools)`` while its ``c_hang`` call is in
    flight (it never answers: the port it reaches is accepted and closed), then the hang
    cancelled and ``after(tools)`` (30 s in all: a hang guard)."""
    async with (
        await anyio.create_tcp_listener(local_host="127.0.0.1") as listener,
        MCPHub.open() as hub,
    ):
        port = listener.extra(SocketAttribute.local_port)
        tools = (await hub.worker_tools(Toolset("w"), [server])).current()
        with anyio.fail_after(30):
            async with anyio.create_task_group() as tg:
                tg.start_soon(
                    partial(tools.call, "c_hang", {"port": port}, call_id="h")
                )  # no answer
                stream = await cast(SocketListener, listener.listeners[0]).accept()
                await stream.aclose()  # the hang is in flight
                await busy(tools)
                tg.cancel_scope.cancel()
            if after is not None:
                await after(tools)


async def test_a_message_during_several_calls_names_them_all(
    server: MCPServer, kept: _Kept
) -> None:
    async def busy(tools: Toolset) -> None:
        await tools.call("c_chatty", {"text": "busy", "level": "warning"}, call_id="c")

    await during_a_hang(server, busy)
    (record,) = kept.records
    assert record.getMessage() == "MCP server 'chat' during one of 2 calls (chatty, hang): busy"
    assert record.mcp_tool is None  # type: ignore[attr-defined]


async def test_in_a_run_a_calls_log_record_carries_the_steps_context_and_trace(
    server: MCPServer, kept: _Kept
) -> None:
    async def work(
        description: str, results: list[ToolResultPart], request: ModelRequest
    ) -> ModelResponse | str:
        if not results:
            return tool_call_response("c_chatty", {"text": "working", "level": "warning"})
        return "done"

    collector = SpanCollector()
    provider = TracerProvider(shutdown_on_exit=False)
    provider.add_span_processor(collector)
    team, _ = team_of(work, [server], plans=[plan_json({"description": "chat"})])
    team = dataclasses.replace(team, telemetry=Telemetry(provider))
    result = await team.run("chat a little")
    provider.shutdown()
    (record,) = kept.records
    assert record.getMessage() == "MCP server 'chat' during tool chatty: working"
    assert (record.run_id, record.step_id, record.worker) == (  # type: ignore[attr-defined]
        result.run_id,
        result.steps[0].step_id,
        "w0",
    )
    (call,) = [s for s in collector.spans() if s.name == "tools/call chatty"]
    assert call.context is not None
    assert record.trace_id == format(call.context.trace_id, "032x")  # type: ignore[attr-defined]
    assert record.span_id == format(call.context.span_id, "016x")  # type: ignore[attr-defined]
