"""What the model reads of an MCP result that is not text: a real server's image."""

from __future__ import annotations

import pytest

from regiment.tools import MCPHub, MCPServer, Toolset

from .conftest import SERVER_COMMAND

pytestmark = pytest.mark.anyio


async def test_an_images_base64_is_left_out_of_what_the_model_reads() -> None:
    # A tool result reaches the model as text: a 300 kB PNG was 400 kB of base64 in it.
    server = MCPServer.stdio(SERVER_COMMAND, name="stdio-app")
    async with MCPHub.open() as hub:
        tools = (await hub.worker_tools(Toolset("w"), [server])).current()
        outcome = await tools.call("picture", {"size": 300_000}, call_id="c1")
    assert not outcome.is_error
    assert outcome.content == [
        {
            "type": "image",
            "mimeType": "image/png",
            "data": "(300,000 bytes of image data, left out: the model reads tool results as text)",
        }
    ]
