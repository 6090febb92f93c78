"""A timed-out MCP call is not tried again beside itself, unless the server marks its tool
safe to repeat.

The client tells the server a timed-out call is cancelled (``notifications/cancelled``),
but nothing answers that it stopped, and a sync tool runs on in the server's thread
whatever it is told. With ``retry_on=(TimeoutError,)`` the retry used to be sent at
once: the server then ran the call twice (three times, with ``retries=2``), a refund
issued again. Now the call ends at its timeout, saying why it was not tried again; a
tool the server marks ``idempotentHint`` (or ``readOnlyHint``) is still retried. Against
a real MCP server over stdio and over streamable HTTP.
"""

from __future__ import annotations

import logging
import uuid

import pytest

from regiment.tools import MCPConnection, MCPHub, MCPServer, Toolset

from .conftest import SDK_HTTP_LEAKS, SERVER_COMMAND

pytestmark = [pytest.mark.anyio, *SDK_HTTP_LEAKS]

RETRY_TIMEOUTS = {"timeout": 0.5, "retries": 2, "retry_on": (TimeoutError,), "backoff": 0.0}


@pytest.fixture(params=["stdio", "http"])
def server(request: pytest.FixtureRequest) -> MCPServer:
    if request.param == "stdio":
        return MCPServer.stdio(SERVER_COMMAND, name="tallies", **RETRY_TIMEOUTS)  # type: ignore[arg-type]
    url = request.getfixturevalue("http_url")
    return MCPServer.http(url, name="tallies", **RETRY_TIMEOUTS)  # type: ignore[arg-type]


async def released(connection: MCPConnection, name: str, started: int) -> object:
    """Let the server's calls of ``name`` act once ``started`` of them have: how many
    started and acted (sent straight over the connection, with no timeout of the tools')."""
    answer = await connection.call("release", {"name": name, "started": started})
    return answer.structured_content


async def test_a_timed_out_call_is_not_sent_again_while_the_server_may_run_it(
    server: MCPServer, caplog: pytest.LogCaptureFixture
) -> None:
    name = uuid.uuid4().hex
    with caplog.at_level(logging.WARNING, logger="regiment.tools"):
        async with MCPHub.open() as hub:
            tools = await hub.worker_tools(Toolset("w"), [server])
            result = await tools.current().call("tally", {"name": name}, call_id="c1")
            ran = await released(tools.connections[0], name, 1)
    assert (result.is_error, result.error_type, result.attempts) == (True, "timeout", 1)
    assert result.content == (
        "timed out after 0.5s; MCP server 'tallies' may still be running it (it was asked to "
        "stop, and no answer says it did), so it was not tried again, as a second call could "
        "act twice; a tool the server marks readOnlyHint or idempotentHint, unlike 'tally', "
        "is tried again; it had started, so it may have acted (check before calling it again "
        "if it changes anything)"
    )
    assert ran == {"started": 1, "acted": 1}  # the server ran it once, to its end
    (warned,) = [r.getMessage() for r in caplog.records if "not tried again" in r.message]
    assert warned.startswith("a timed-out tool call was not tried again: MCP server 'tallies'")


async def test_a_tool_the_server_marks_idempotent_is_tried_again(server: MCPServer) -> None:
    name = uuid.uuid4().hex
    async with MCPHub.open() as hub:
        tools = await hub.worker_tools(Toolset("w"), [server])
        result = await tools.current().call("tally_again", {"name": name}, call_id="c1")
        ran = await released(tools.connections[0], name, 3)
    assert (result.is_error, result.error_type, result.attempts) == (True, "timeout", 3)
    assert str(result.content).startswith("timed out after 0.5s; it had started")
    assert ran == {"started": 3, "acted": 3}  # the server said repeating it is safe
