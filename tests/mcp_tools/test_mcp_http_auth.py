"""A streamable-HTTP MCP server that wants credentials: ``headers=`` carries them, and
one that refuses them says so, with the HTTP status and what to give."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from regiment.errors import ToolError
from regiment.tools import MCPHub, MCPServer, Toolset

from .conftest import SDK_HTTP_LEAKS, start_http, stop

pytestmark = [pytest.mark.anyio, *SDK_HTTP_LEAKS]


@pytest.fixture(scope="module")
def guarded_port() -> Iterator[int]:
    """A server that wants the token ``s3cret``, for the module's tests that leave it so
    (one that rotates its token starts its own)."""
    process, port = start_http(0, "guarded", "--token", "s3cret")
    try:
        yield port
    finally:
        stop(process)


async def test_a_server_that_wants_a_token_gets_it_from_headers_or_says_what_it_wants(
    guarded_port: int,
) -> None:
    url = f"http://127.0.0.1:{guarded_port}/mcp"
    async with MCPHub.open() as hub:
        given = MCPServer.http(url, name="guarded", headers={"Authorization": "Bearer s3cret"})
        tools = (await hub.worker_tools(Toolset("w"), [given])).current()
        added = await tools.call("add", {"a": 1, "b": 2}, call_id="c1")
        with pytest.raises(ToolError) as refused:
            await hub.worker_tools(Toolset("v"), [MCPServer.http(url, name="bare")])
    assert added.content == {"result": 3}
    # It said "MCPError: Server returned an error response", with no word of the status.
    assert str(refused.value) == (
        f"MCP server 'bare' ({url}) could not be connected to: PermissionError: the server answered "
        'HTTP 401 Unauthorized (WWW-Authenticate: Bearer realm="tests"): it wants credentials; '
        'give them in headers= (headers sent: none), e.g. headers={"Authorization": "Bearer ..."} '
        '(in a team file: headers = { Authorization = "Bearer ${TOKEN}" }, the token read from '
        "the environment)"
    )


async def test_a_key_in_the_url_stays_out_of_names_and_messages(guarded_port: int) -> None:
    # The URL was the server's name as given: its key went to logs, spans, and (in a
    # lost call's error) to the model and the journal.
    url = f"http://KEY1@127.0.0.1:{guarded_port}/mcp?api_key=KEY2&v=1"
    async with MCPHub.open() as hub:
        with pytest.raises(ToolError) as refused:
            await hub.worker_tools(Toolset("w"), [MCPServer.http(url)])
    shown = f"http://127.0.0.1:{guarded_port}/mcp?api_key=...&v=..."
    assert MCPServer.http(url).name == shown
    assert str(refused.value).startswith(f"MCP server '{shown}' could not be connected to: ")
    assert "KEY" not in str(refused.value)


async def test_a_token_refused_mid_session_says_so_on_each_call() -> None:
    # A session opened with a token the server later stopped taking (expired, rotated)
    # said "answered with error -32603: Server returned an error response" on each call.
    process, port = start_http(0, "guarded", "--token", "s3cret")
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        async with MCPHub.open() as hub:
            given = MCPServer.http(url, name="guarded", headers={"Authorization": "Bearer s3cret"})
            tools = (await hub.worker_tools(Toolset("w"), [given])).current()
            rotated = await tools.call("rotate_token", {}, call_id="c1")
            refused = [await tools.call("add", {"a": 1, "b": 2}, call_id=f"c{i}") for i in (2, 3)]
    finally:
        stop(process)
    assert rotated.content == {"result": "rotated"}
    for result in refused:
        assert result.is_error
        assert result.content == (
            "ToolError: MCP server 'guarded' refused the call: the server answered HTTP 401 "
            'Unauthorized (WWW-Authenticate: Bearer realm="tests") to this call, though it took '
            "the same credentials (headers sent: Authorization) when the session began: they may "
            "have expired or been revoked; give current ones in headers= and start the team again"
        )
