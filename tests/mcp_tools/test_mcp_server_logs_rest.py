"""The flood bound of an MCP server's log messages outside a single call: those sent while
no call is in flight (here, as the connection starts and lists the tools) and those sent
during several calls share one allowance per connection, :data:`LIMIT` a minute; the rest
are counted and said in one WARNING when the session ends. (Each call's own allowance is
tested in ``test_mcp_server_logs``.)"""

from __future__ import annotations

import logging
import sys
from pathlib import Path

import pytest

from regiment.tools import MCPHub, MCPServer, Toolset

from .conftest import SDK_HTTP_LEAKS
from .test_mcp_server_logs import _Kept, during_a_hang, kept, server

pytestmark = [pytest.mark.anyio, *SDK_HTTP_LEAKS]
__all__ = ("kept", "server")  # (fixtures)

FLOODING = [sys.executable, str(Path(__file__).with_name("hand_server.py")), "flooding", "250"]
DROPPED = (
    "MCP server {name!r} sent 150 log messages that were not logged: at most 100 a minute "
    "are (a server that logs this much should log less, or to its own file)"
)


async def test_a_flood_while_no_call_runs_is_bounded_and_said_once(kept: _Kept) -> None:
    async with MCPHub.open() as hub:
        tools = (
            await hub.worker_tools(Toolset("w"), [MCPServer.stdio(FLOODING, name="fl")])
        ).current()
        pinged = await tools.call("ping", {}, call_id="p")  # (what came before it is handled)
        assert pinged.content == "pong"
        assert len(kept.records) == 100  # nothing said yet of the rest: the minute goes on
    messages = [r.getMessage() for r in kept.records]
    assert messages[:2] == ["MCP server 'fl': tick", "MCP server 'fl': tick 1"]
    assert messages[99] == "MCP server 'fl': tick 99"
    assert messages[100:] == [DROPPED.format(name="fl")]  # once the session ended
    assert [r.levelno for r in kept.records] == [logging.INFO] * 100 + [logging.WARNING]
    assert {getattr(r, "mcp_tool", "?") for r in kept.records[:100]} == {None}
    assert {getattr(r, "mcp_server", None) for r in kept.records} == {"fl"}


async def test_a_flood_during_several_calls_is_bounded_apart_from_each_call(
    server: MCPServer, kept: _Kept
) -> None:
    async def busy(tools: Toolset) -> None:
        said = await tools.call("c_chatty", {"text": "busy", "count": 250}, call_id="c")
        assert said.content == {"result": "logged 250"}

    async def alone(tools: Toolset) -> None:
        # Alone now, a call has its own allowance, whatever the rest used.
        await tools.call("c_chatty", {"text": "alone"}, call_id="a")

    await during_a_hang(server, busy, alone)
    messages = [r.getMessage() for r in kept.records]
    during = "MCP server 'chat' during one of 2 calls (chatty, hang): busy"
    assert messages[:2] == [during, f"{during} 1"]
    assert messages[99] == f"{during} 99"
    assert messages[100:] == [
        "MCP server 'chat' during tool chatty: alone",
        DROPPED.format(name="chat"),  # once the session ended
    ]
