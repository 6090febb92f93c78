"""A tool list that goes bad after ``notifications/tools/list_changed`` keeps the
contract it has at start: a tool the SDK cannot read, or whose schema is not valid JSON
Schema, is left out alone with a warning and the rest stay usable; a tool the server
removed, called by a step that looked it up before, is an error that says so."""

from __future__ import annotations

import logging
import sys
from pathlib import Path

import anyio
import pytest

from regiment.tools import MCPHub, MCPServer, Toolset

pytestmark = pytest.mark.anyio

SERVER = [sys.executable, str(Path(__file__).with_name("hand_server.py")), "changing"]


async def test_a_relisted_bad_tool_is_left_out_and_a_removed_one_says_so(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async with MCPHub.open() as hub:
        live = await hub.worker_tools(Toolset("w"), [MCPServer.stdio(SERVER, name="chg")])
        (connection,) = live.connections
        before = live.current()
        assert set(before.names) == {"keep", "gone", "degrade", "vanish"}
        ran = await before.call("gone", {}, call_id="g0")  # listed: no note of a change
        assert (ran.is_error, ran.content) == (False, "gone ran")
        version = connection.version
        with caplog.at_level(logging.WARNING, logger="regiment.tools.mcp"):
            degraded = await before.call("degrade", {}, call_id="d")
            with anyio.fail_after(10):
                await connection.wait_listed(version)
        assert (degraded.is_error, degraded.content) == (False, "degrade ran")

        assert set(live.current().names) == {"keep", "degrade"}
        assert set(connection.left_out) == {"notype", "badschema"}
        warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
        assert any("'notype' left out" in w and "inputSchema.type" in w for w in warned)
        assert any("'badschema' left out" in w and "invalid input schema" in w for w in warned)

        stale = await before.call("gone", {}, call_id="g1")  # looked up before the change
        assert stale.is_error
        assert str(stale.content) == (  # not sent: the server said it has no such tool
            "ToolError: MCP server 'chg' no longer has tool 'gone' (its tool list changed); "
            "use the tools offered now"
        )
        now = await live.current().call("gone", {}, call_id="g2")
        assert (now.is_error, now.error_type) == (True, "unknown_tool")
        kept = await live.current().call("keep", {}, call_id="k")
        assert (kept.is_error, kept.content) == (False, "keep ran")


async def test_an_error_answered_with_the_tools_removal_says_the_tool_is_gone() -> None:
    async with MCPHub.open() as hub:
        live = await hub.worker_tools(Toolset("w"), [MCPServer.stdio(SERVER, name="chg")])
        result = await live.current().call("vanish", {}, call_id="v")
        assert result.is_error
        assert str(result.content) == (
            "ToolError: MCP server 'chg' no longer has tool 'vanish' (its tool list changed; "
            "it said: vanish was removed); use the tools offered now"
        )
        assert "vanish" not in live.current()  # the call returned once the list was in
        refused = await live.current().call("refuse_me", {}, call_id="r")
        assert refused.error_type == "unknown_tool"
