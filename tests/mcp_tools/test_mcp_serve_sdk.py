"""``regiment mcp`` over stdio serves the SDK's ``MCPServer`` on streams of its own
through ``serve_streams``, the one place that reaches the SDK's private low-level
server (mcp 2.3 has no public way to do it). These tests fail loudly when the SDK
changes under it."""

from __future__ import annotations

import inspect
from typing import cast

import anyio
import pytest
from mcp.client.session import ClientSession
from mcp.server.mcpserver import MCPServer as SDKServer
from mcp.shared.message import SessionMessage
from mcp.types import TextContent

from regiment.cli._mcp_stdio import serve_streams
from regiment.errors import ConfigError

pytestmark = pytest.mark.anyio


def test_the_sdk_still_serves_its_own_stdio_the_way_serve_streams_does() -> None:
    """If this fails, the SDK changed how ``run_stdio_async`` serves: read it again and
    make ``serve_streams`` do what it does now (or use the public API it may have grown)."""
    source = inspect.getsource(SDKServer.run_stdio_async)
    assert "self._lowlevel_server.run(" in source, source
    assert "self._lowlevel_server.create_initialization_options()" in source, source
    low = SDKServer("probe")._lowlevel_server
    names = list(inspect.signature(low.run).parameters)
    assert names[:3] == ["read_stream", "write_stream", "initialization_options"], names


async def test_serve_streams_serves_a_real_client_on_memory_streams() -> None:
    server = SDKServer("echo")

    @server.tool()
    def echo(text: str) -> str:
        """Say it back."""
        return text

    to_server, server_reads = anyio.create_memory_object_stream[SessionMessage | Exception](8)
    server_writes, from_server = anyio.create_memory_object_stream[SessionMessage](8)
    async with anyio.create_task_group() as tg:
        tg.start_soon(serve_streams, server, server_reads, server_writes)
        async with ClientSession(from_server, to_server) as session:
            await session.initialize()
            listed = await session.list_tools()
            result = await session.call_tool("echo", {"text": "hi"})
        tg.cancel_scope.cancel()  # the client is done; its streams are closed
    assert [t.name for t in listed.tools] == ["echo"]
    (block,) = result.content
    assert isinstance(block, TextContent)
    assert block.text == "hi"


async def test_an_sdk_without_the_low_level_server_is_a_config_error_with_the_fix() -> None:
    sends, reads = anyio.create_memory_object_stream[SessionMessage | Exception](1)
    writes, _read_back = anyio.create_memory_object_stream[SessionMessage](1)
    not_a_server = cast(SDKServer, object())  # what an SDK that moved it would give
    with pytest.raises(ConfigError, match=r"pip install 'mcp>=2\.3,<3'"):
        await serve_streams(not_a_server, reads, writes)
    for stream in (sends, reads, writes, _read_back):
        stream.close()
