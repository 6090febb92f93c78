"""``regiment mcp --http`` stopped by SIGTERM or Ctrl-C winds down as ``regiment serve``
does: the calls in flight end with an error result saying so, their runs end
``cancelled`` (journaled so), the team stops, and the command exits 0 (130 after
SIGINT, saying ``regiment: interrupted``).

uvicorn took the signals and re-raised a SIGTERM once it had stopped: the process died
(exit 143) with the team up and its runs left ``running`` in the journal. And it waited
for every open response to end, a client's idle GET stream too, which ends only when the
client lets go: the stop took as long as the client held it (its read timeout).
"""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import anyio
import httpx2
import pytest
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.types import CallToolResult

from regiment.journal import open_journal
from tests.cli.helpers import write_team

from .conftest import SDK_HTTP_LEAKS, die_with_parent, stop
from .test_mcp_serve_pause import text_of

# The server is a subprocess on asyncio whichever loop the client uses: one is enough.
pytestmark = [pytest.mark.anyio, pytest.mark.parametrize("anyio_backend", ["asyncio"])]


def _serving(tmp_path: Path, *options: str) -> tuple[subprocess.Popen[str], str]:
    """``regiment mcp`` of a team whose one step waits for ever, over HTTP; its URL."""
    team = write_team(tmp_path, "stuck")
    argv = ["mcp", str(team), "--app-dir", str(tmp_path), "--http", "0", *options]
    process = subprocess.Popen(
        [sys.executable, "-m", "regiment", *argv],
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=die_with_parent,
    )
    assert process.stderr is not None
    line = process.stderr.readline()  # printed once the socket listens
    assert " at http://127.0.0.1:" in line, line
    return process, line.split(" at ")[1].strip()


@SDK_HTTP_LEAKS[0]
@SDK_HTTP_LEAKS[1]
async def test_sigterm_cancels_the_calls_in_flight_and_exits_0(tmp_path: Path) -> None:
    journal = str(tmp_path / "runs.db")
    process, url = _serving(tmp_path, "--journal", journal)
    planned, results = anyio.Event(), list[CallToolResult]()

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        planned.set()  # the run's step works now, and waits for ever

    try:
        async with (
            httpx2.AsyncClient() as http,
            streamable_http_client(url, http_client=http) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            async with anyio.create_task_group() as tg:

                async def call() -> None:
                    goal = {"goal": "wait"}
                    results.append(
                        await session.call_tool("run", goal, progress_callback=on_progress)
                    )

                tg.start_soon(call)
                await planned.wait()
                process.send_signal(signal.SIGTERM)
        code = await anyio.to_thread.run_sync(process.wait)
        assert process.stderr is not None
        said = process.stderr.read()
    finally:
        stop(process)
    assert code == 0, said
    assert "Traceback" not in said
    (result,) = results
    assert result.is_error
    assert "the server is stopping: the run was cancelled" in text_of(result)
    opened = await open_journal(journal)
    try:
        assert [r.status for r in await opened.list_runs()] == ["cancelled"]
    finally:
        await opened.close()


async def test_sigterm_ends_an_idle_clients_open_stream_and_exits(tmp_path: Path) -> None:
    process, url = _serving(tmp_path)
    try:
        async with httpx2.AsyncClient(timeout=None) as http:  # a client that waits for ever
            headers = await _initialized(http, url)
            get = http.stream("GET", url, headers={**headers, "accept": "text/event-stream"})
            async with get as stream:
                assert stream.status_code == 200
                process.send_signal(signal.SIGTERM)
                rest = [chunk async for chunk in stream.aiter_bytes()]  # until the stream ends
            code = await anyio.to_thread.run_sync(process.wait)
        assert process.stderr is not None
        said = process.stderr.read()
    finally:
        stop(process)
    assert code == 0, said
    assert (rest, said) == ([], "")  # no event, and nothing to say: a clean end


async def _initialized(http: httpx2.AsyncClient, url: str) -> dict[str, str]:
    """An MCP session opened by hand (initialize, then initialized); its headers."""
    version = "2025-11-25"
    hello = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "t"}},
    }
    accept = {"accept": "application/json, text/event-stream"}
    opened = await http.post(url, json=hello, headers=accept)
    assert opened.status_code == 200, opened.text
    headers = {"mcp-session-id": opened.headers["mcp-session-id"]}
    headers["mcp-protocol-version"] = version
    told = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    assert (await http.post(url, json=told, headers={**accept, **headers})).status_code == 202
    return headers


async def test_ctrl_c_exits_130_saying_so(tmp_path: Path) -> None:
    process, _ = _serving(tmp_path)
    try:
        process.send_signal(signal.SIGINT)
        code = await anyio.to_thread.run_sync(process.wait)
        assert process.stderr is not None
        said = process.stderr.read()
    finally:
        stop(process)
    assert (code, said) == (130, "regiment: interrupted\n")
