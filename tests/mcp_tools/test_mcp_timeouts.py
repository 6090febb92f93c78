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


async def test_a_timed_out_call_is_tried_again_only_if_the_server_marks_it_safe(
    server: MCPServer, caplog: pytest.LogCaptureFixture
) -> None:
    plain, marked = uuid.uuid4().hex, uuid.uuid4().hex
    with caplog.at_level(logging.WARNING, logger="regiment.tools"):
        async with MCPHub.open() as hub:  # one server for both (a stdio one takes seconds)
            tools = await hub.worker_tools(Toolset("w"), [server])
            result = await tools.current().call("tally", {"name": plain}, call_id="c1")
            ran = await released(tools.connections[0], plain, 1)
            again = await tools.current().call("tally_again", {"name": marked}, call_id="c2")
            ran_again = await released(tools.connections[0], marked, 3)
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
    # idempotentHint: the server says a repeat adds nothing, so retry_on applies as ever
    assert (again.is_error, again.error_type, again.attempts) == (True, "timeout", 3)
    assert str(again.content).startswith("timed out after 0.5s; it had started")
    assert ran_again == {"started": 3, "acted": 3}
