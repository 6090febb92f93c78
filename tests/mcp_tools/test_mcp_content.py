"""What a model sees of a real MCP server: an image result, tool names it cannot tell apart."""

from __future__ import annotations

import logging
import sys
from pathlib import Path

import pytest

from regiment.errors import ConfigError, ToolError
from regiment.tools import MCPHub, MCPServer, Toolset

from .conftest import SERVER_COMMAND

pytestmark = pytest.mark.anyio

RAW_SERVER = str(Path(__file__).with_name("raw_server.py"))


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


async def test_two_tools_of_one_server_alike_to_a_model_api_say_so() -> None:
    # It said the tool 'comes from two MCP servers both named ...' and to rename them.
    server = MCPServer.stdio([*SERVER_COMMAND, "--twins"], name="twins")
    async with MCPHub.open() as hub:
        with pytest.raises(ConfigError) as alike:
            await hub.worker_tools(Toolset("w"), [server])
    assert str(alike.value).startswith(
        "MCP server 'twins' lists two tools that are both called 'twin_tool' once their "
        "names are made usable by model APIs"
    )
    assert "leave one out with exclude=[" in str(alike.value)


async def test_a_reply_nested_too_deep_to_read_fails_the_call_not_hangs_it() -> None:
    # The SDK logged that it could not parse the message and dropped it; the call,
    # with no timeout (the default), waited for its answer for ever.
    server = MCPServer.stdio([sys.executable, RAW_SERVER], name="raw")
    async with MCPHub.open() as hub:
        tools = (await hub.worker_tools(Toolset("w"), [server])).current()
        deep = await tools.call("deep", {}, call_id="c1")
        shallow = await tools.call("shallow", {}, call_id="c2")  # the session still serves
    assert deep.is_error
    assert isinstance(deep.content, str)
    assert deep.content.startswith(
        "ToolError: MCP server 'raw' sent a message that could not be read (ValidationError: "
    )
    assert "recursion limit exceeded" in deep.content
    assert deep.content.endswith(
        "it may have been this call's answer, so the call failed. Check what the server's "
        "tool returns"
    )
    assert not shallow.is_error


async def test_lines_that_are_no_mcp_message_are_ignored_with_one_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # A server that print()s in a tool failed every call in flight, though no such line
    # can be an answer and the answers came next.
    server = MCPServer.stdio([sys.executable, RAW_SERVER], name="raw")
    async with MCPHub.open() as hub:
        tools = (await hub.worker_tools(Toolset("w"), [server])).current()
        with caplog.at_level(logging.DEBUG, logger="regiment.tools.mcp"):
            first = await tools.call("chatty", {}, call_id="c1")
            second = await tools.call("chatty", {}, call_id="c2")
    assert (first.is_error, first.content) == (False, "chatty done")
    assert (second.is_error, second.content) == (False, "chatty done")
    stray = [r for r in caplog.records if "not an MCP message" in r.getMessage()]
    assert [r.levelno for r in stray] == [logging.WARNING] + [logging.DEBUG] * 5  # 3 a call
    assert stray[0].getMessage() == (
        "MCP server 'raw' wrote a line to stdout that is not an MCP message, ignored "
        "('working on it...'); a stdio server must write only MCP messages to stdout (its "
        "logs go to stderr)"
    )


async def test_a_long_mcp_result_is_cut_at_the_worker_or_server_limit() -> None:
    # A server's result reached the model whatever its length.
    limited = MCPServer.stdio(SERVER_COMMAND, name="limited", prefix="l_", max_result_chars=30)
    server = MCPServer.stdio(SERVER_COMMAND, name="stdio-app")
    async with MCPHub.open() as hub:
        tools = await hub.worker_tools(Toolset("w", max_result_chars=50), [server, limited])
        worker_cut = await tools.current().call("shout", {"text": "a" * 200}, call_id="c1")
        server_cut = await tools.current().call("l_shout", {"text": "a" * 200}, call_id="c2")
    assert isinstance(worker_cut.content, str)
    assert isinstance(server_cut.content, str)
    text = '{"result":"' + "A" * 200 + '"}'  # its structured content, as the model reads it
    assert worker_cut.content.startswith(text[:50] + "\n\n[cut: this result was 213 characters")
    assert server_cut.content.startswith(text[:30] + "\n\n[cut: this result was 213 characters")


async def test_a_tool_whose_schema_refers_nowhere_is_left_out_not_a_crash(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # Every call of such a tool raised jsonschema's referencing error out of the call.
    server = MCPServer.stdio([sys.executable, RAW_SERVER], name="raw")
    async with MCPHub.open() as hub:
        tools = (await hub.worker_tools(Toolset("w"), [server])).current()
        scoped = await tools.call("scoped", {"x": 1}, call_id="c1")
    assert [t.name for t in tools.definitions] == ["deep", "shallow", "chatty", "scoped"]
    left_out = [r.getMessage() for r in caplog.records if "left out" in r.getMessage()]
    assert left_out == [
        "MCP server 'raw': tool 'dangling' left out: tool 'dangling' has an input schema whose "
        "$ref '#/$defs/Missing' cannot be resolved (PointerToNowhere): no call could be "
        "checked against it",
        "MCP server 'raw': tool 'remote' left out: tool 'remote' has an input schema whose "
        "$ref 'https://schemas.example.invalid/x.json' cannot be resolved (Unresolvable): no "
        "call could be checked against it",
    ]
    # a ref under an $id of its own is found out by the call, which never reaches the server
    assert (scoped.is_error, scoped.error_type) == (True, "invalid_arguments")
    assert "the server's input schema cannot be checked (" in str(scoped.content)


async def test_a_server_too_slow_to_start_says_which_timeout_to_raise() -> None:
    # It said "no answer in time (start_timeout)": neither the value nor what to do.
    slow = MCPServer.stdio([*SERVER_COMMAND, "--slow-start", "30"], name="slow", start_timeout=1)
    async with MCPHub.open() as hub:
        with pytest.raises(ToolError) as failed:
            await hub.worker_tools(Toolset("w"), [slow])
    assert str(failed.value).endswith(
        "could not be started: it did not start and list its tools within start_timeout=1s; "
        "raise start_timeout for a server that starts slowly"
    )
