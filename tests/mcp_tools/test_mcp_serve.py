"""``regiment mcp TEAM_FILE``: the team served over stdio as one MCP tool, run(goal),
driven by the SDK's own client."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.types import TextContent

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parents[2]


async def test_the_team_is_one_tool_with_progress_per_step() -> None:
    seen: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total, message))

    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "regiment", "mcp", "examples/mcp/team.toml"],
        cwd=str(ROOT),
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        (tool,) = (await session.list_tools()).tools
        assert tool.name == "run"
        assert tool.input_schema["required"] == ["goal"]
        assert "writer: Gathers facts and writes them up." in (tool.description or "")

        result = await session.call_tool(
            "run", {"goal": "heat pumps"}, progress_callback=on_progress
        )
        assert not result.is_error
        assert result.structured_content == {"result": "The team's answer: Goal: heat pumps"}
        assert seen == [
            (0.0, 2.0, "plan v1: 2 steps"),
            (1.0, 2.0, "step s1 done by writer"),
            (2.0, 2.0, "step s2 done by writer"),
        ]

        empty = await session.call_tool("run", {"goal": "  "})
        assert empty.is_error
        (block,) = empty.content
        assert isinstance(block, TextContent)
        assert "ConfigError: the goal is empty" in block.text
