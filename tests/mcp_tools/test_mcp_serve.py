"""``regiment mcp TEAM_FILE``: the team served over stdio as one MCP tool, run(goal),
driven by the SDK's own client."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import cast

import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.types import RequestParamsMeta, TextContent

from tests.telemetry.otlp_receiver import OtlpReceiver

from .conftest import SDK_HTTP_LEAKS, die_with_parent, stop

pytestmark = [pytest.mark.anyio, *SDK_HTTP_LEAKS]

# ``regiment mcp`` runs in a process of its own (on the CLI's loop); the tests marked so
# run only the MCP SDK's client under this test's backend: once is enough.
_CLIENT_ONLY = pytest.mark.parametrize("anyio_backend", ["asyncio"])

ROOT = Path(__file__).resolve().parents[2]


@_CLIENT_ONLY
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


@pytest.fixture(scope="module")
def served_url() -> Iterator[str]:
    """``regiment mcp --http 0``: the team over streamable HTTP; stopped with escalation."""
    process = subprocess.Popen(
        [sys.executable, "-m", "regiment", "mcp", "examples/mcp/team.toml", "--http", "0"],
        cwd=ROOT,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=die_with_parent,
    )
    try:
        assert process.stderr is not None
        line = process.stderr.readline()  # printed once the socket listens
        assert line.startswith("regiment: serving team 'writers' at http://127.0.0.1:"), line
        yield line.split(" at ")[1].strip()
    finally:
        stop(process)


@_CLIENT_ONLY
async def test_the_team_over_streamable_http(served_url: str) -> None:
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    seen: list[str | None] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append(message)

    async with (
        httpx2.AsyncClient() as http,
        streamable_http_client(served_url, http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        result = await session.call_tool("run", {"goal": "tides"}, progress_callback=on_progress)
        assert result.structured_content == {"result": "The team's answer: Goal: tides"}
        assert seen == ["plan v1: 2 steps", "step s1 done by writer", "step s2 done by writer"]


@pytest.mark.parametrize("anyio_backend", ["trio"])
async def test_http_on_trio_is_a_clear_usage_error() -> None:
    from regiment.cli import run_async

    out, err = io.StringIO(), io.StringIO()
    argv = ["mcp", str(ROOT / "examples/mcp/team.toml"), "--http", "0", "--app-dir", str(ROOT)]
    code = await run_async(argv, stdout=out, stderr=err, environ={})
    assert code == 2
    assert "regiment mcp --http needs --backend asyncio" in err.getvalue()


@_CLIENT_ONLY
async def test_trace_jaeger_parents_each_run_by_the_client_s_meta_traceparent() -> None:
    """``regiment mcp --trace jaeger``: the runs' spans go over OTLP, and a run is a child
    of the span the client named in the request's ``_meta`` (the MCP conventions' carrier)."""
    client_trace, client_span = "0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331"
    with OtlpReceiver() as receiver:
        collector = receiver.endpoint.removesuffix("/v1/traces")
        params = StdioServerParameters(
            command=sys.executable,
            args=["-m", "regiment", "mcp", "examples/mcp/team.toml", "--trace", "jaeger"],
            cwd=str(ROOT),
            env={**os.environ, "OTEL_EXPORTER_OTLP_ENDPOINT": collector},
        )
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            sent = {"traceparent": f"00-{client_trace}-{client_span}-01"}
            meta = cast("RequestParamsMeta", sent)  # extra keys: mypy reads it as closed
            result = await session.call_tool("run", {"goal": "heat pumps"}, meta=meta)
            assert not result.is_error
            untraced = await session.call_tool("run", {"goal": "wind"})  # no _meta: a new trace
            assert not untraced.is_error
        spans = receiver.spans()  # the server flushed them as it stopped
    first, second = [s for s in spans if s.name == "invoke_agent writers"]
    assert (first.trace_id, first.parent_span_id) == (client_trace, client_span)
    assert [s.name for s in spans if s.trace_id == client_trace and s.parent_span_id is None] == []
    assert second.parent_span_id is None
    assert second.trace_id != client_trace
