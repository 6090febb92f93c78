"""An MCP tool's arguments are checked against its input schema before the call; a
number that is NaN or infinite (as a lenient JSON parser reads ``NaN``) passes a JSON
Schema ``number`` check but cannot be sent as JSON: it is refused, with the other
problems, and nothing reaches the server."""

from __future__ import annotations

import pytest

from regiment.tools import MCPHub, MCPServer, Toolset

from .conftest import SERVER_COMMAND

pytestmark = pytest.mark.anyio


async def test_nan_and_infinity_are_refused_before_the_call() -> None:
    server = MCPServer.stdio(SERVER_COMMAND, name="calc", include=["add", "half"])
    async with MCPHub.open() as hub:
        tools = (await hub.worker_tools(Toolset("w"), [server])).current()
        for bad, shown in (
            (float("nan"), "NaN"),
            (float("inf"), "Infinity"),
            (-float("inf"), "-Infinity"),
        ):
            result = await tools.call("half", {"x": bad}, call_id="c")
            assert result.error_type == "invalid_arguments"
            assert result.attempts == 0  # never sent
            assert result.content == (
                f"invalid arguments for tool 'half': x: Input should be a finite number (got {shown})"
            )
        both = await tools.call("add", {"a": "one", "b": float("nan")}, call_id="d")
        assert both.content == (  # reported with the schema's own findings
            "invalid arguments for tool 'add': a: Input should be an integer (got \"one\"); "
            "b: Input should be an integer (got NaN); b: Input should be a finite number (got NaN)"
        )
        fine = await tools.call("half", {"x": 3}, call_id="e")
        assert (fine.is_error, fine.content) == (False, {"result": 1.5})
