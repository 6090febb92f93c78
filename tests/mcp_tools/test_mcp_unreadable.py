"""A server whose tool list has tools the SDK cannot read: the others are used.

The SDK refused the whole ``tools/list`` answer for one tool whose ``inputSchema``
had no ``"type"``, so the server did not start and none of its tools could be used.
"""

from __future__ import annotations

import logging
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from regiment.hierarchy import Planner, Team, Worker
from regiment.models import ScriptedModel
from regiment.tools import MCPHub, MCPServer, Toolset

from .conftest import SDK_HTTP_LEAKS, die_with_parent, stop

pytestmark = [pytest.mark.anyio, *SDK_HTTP_LEAKS]

SERVER = [sys.executable, str(Path(__file__).with_name("unreadable_server.py"))]


def _warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]


@pytest.fixture(params=["stdio", "http"])
def odd(request: pytest.FixtureRequest) -> Iterator[MCPServer]:
    if request.param == "stdio":
        yield MCPServer.stdio(SERVER, name="odd")
        return
    process = subprocess.Popen(
        [*SERVER, "--http"], stdout=subprocess.PIPE, text=True, preexec_fn=die_with_parent
    )
    assert process.stdout is not None
    port = int(process.stdout.readline().split()[1])  # printed once it listens
    try:
        yield MCPServer.http(f"http://127.0.0.1:{port}/mcp", name="odd")
    finally:
        stop(process)


async def test_only_the_unreadable_tools_are_left_out_each_with_a_warning(
    caplog: pytest.LogCaptureFixture, odd: MCPServer
) -> None:
    server = odd
    with caplog.at_level(logging.WARNING, logger="regiment.tools.mcp"):
        async with MCPHub.open() as hub:
            tools = await hub.worker_tools(Toolset("w"), [server])
            current = tools.current()
            good = await current.call("good", {}, call_id="c1")
            other = await current.call("other", {}, call_id="c2")  # output schema checked
            (connection,) = tools.connections
            left_out = connection.left_out
    assert current.names == ("good", "other")
    assert (good.is_error, good.content) == (False, {"v": 1})
    assert (other.is_error, other.content) == (False, {"v": 7})
    assert sorted(left_out) == ["bad", "loose", "worse"]
    assert left_out["bad"] == "inputSchema.type: Field required"
    said = _warnings(caplog)
    assert (
        "MCP server 'odd': tool 'bad' left out: the SDK cannot read its listing "
        "(inputSchema.type: Field required); the server's other tools are used"
    ) in said
    assert any(m.startswith("MCP server 'odd': tool 'worse' left out: the SDK") for m in said)
    assert any(m.startswith("MCP server 'odd': tool 'loose' left out: tool 'loose'") for m in said)


async def test_include_may_name_an_unreadable_tool_and_exclude_silences_it(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # include= naming a tool the server has but the SDK cannot read is no "has no tool" error.
    named = MCPServer.stdio(SERVER, name="named", include=["good", "bad"])
    quiet = MCPServer.stdio(SERVER, name="quiet", exclude=["bad", "worse", "loose"])
    with caplog.at_level(logging.WARNING, logger="regiment.tools.mcp"):
        async with MCPHub.open() as hub:
            first = (await hub.worker_tools(Toolset("a"), [named])).current()
            second = (await hub.worker_tools(Toolset("b"), [quiet])).current()
    assert first.names == ("good",)
    assert second.names == ("good", "other")
    said = _warnings(caplog)
    assert sum("'named': tool 'bad' left out" in m for m in said) == 1
    assert not any("'quiet'" in m for m in said)
    assert not any("worse" in m for m in said)  # not in include=: not the worker's business


async def test_a_worker_left_with_none_of_its_configured_tools_says_so_at_start(
    caplog: pytest.LogCaptureFixture,
) -> None:
    server = MCPServer.stdio(SERVER, name="odd", include=["bad", "worse"])
    worker = Worker(name="w", description="d", model=ScriptedModel(["x"]), tools=[server])
    team = Team(name="t", planner=Planner(model=ScriptedModel(["x"])), workers=[worker])
    with caplog.at_level(logging.WARNING):
        async with team.start():
            pass
    (said,) = [r for r in caplog.records if r.name == "regiment.worker"]
    assert said.levelno == logging.WARNING
    assert said.getMessage().startswith(
        "worker 'w' gets no tools from MCP server 'odd': every tool of it the worker is "
        "configured to use was left out as unusable ('bad': inputSchema.type: Field required; "
        "'worse': inputSchema: "
    )
