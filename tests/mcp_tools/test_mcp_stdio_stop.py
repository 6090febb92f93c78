"""``regiment mcp TEAM_FILE`` over stdio stopped by SIGTERM or Ctrl-C winds down as
``regiment mcp --http`` does: the call in flight ends with an error result saying so,
its run ends ``cancelled`` (journaled so), the team stops, and the command exits 0
(130 after SIGINT, saying ``regiment: interrupted``); a second signal exits at once.

SIGTERM killed it (exit 143: no answer, the run left ``stalled``, the team not
stopped); SIGINT hung until the client wrote a line or closed stdin, since the SDK
read stdin in a thread nothing could cancel.

The client is a real process pipe speaking JSON-RPC lines, so the test holds the
server's pid for its signals; the server runs on each backend.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import psutil
import pytest
from mcp.types import CallToolResult

from regiment.journal import open_journal
from tests.cli.helpers import read_until, write_napping_team, write_team

from .conftest import die_with_parent, stop
from .test_mcp_serve_pause import served, text_of

LOUD = """
import json, sys
from regiment.models import ModelRequest, ModelResponse, ToolCallPart, text_response
from regiment.tools import tool

@tool
def shout() -> str:
    \"\"\"Prints on stdout and reads stdin.\"\"\"
    print("a stray line", flush=True)
    return f"read {len(sys.stdin.read())} characters"

def brain(request: ModelRequest) -> ModelResponse:
    if request.role in ("planner", "replanner"):
        return text_response(json.dumps({"steps": [{"description": "shout"}]}))
    if request.role != "worker" or len(request.messages) > 1:
        return text_response(str(request.messages[-1].parts[0]))
    call = ToolCallPart(id="c1", name="shout", arguments={})
    return ModelResponse(parts=(call,), stop_reason="tool_use", model="scripted")
"""
STOPPING = "the server is stopping: the run was cancelled"
BACKENDS = pytest.mark.parametrize("backend", ["asyncio", "trio"])


class _Client:
    """``regiment mcp`` of a team file, talked to over its stdin and stdout."""

    def __init__(self, team: Path, backend: str, *options: str) -> None:
        argv = ["mcp", str(team), "--app-dir", str(team.parent), "--backend", backend]
        self.process = subprocess.Popen(
            [sys.executable, "-m", "regiment", *argv, *options],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=team.parent,
            preexec_fn=die_with_parent,
        )
        hello = {"protocolVersion": "2025-06-18", "capabilities": {}}
        self.send("initialize", {**hello, "clientInfo": {"name": "t", "version": "1"}}, 1)
        assert "serverInfo" in self.receive()["result"]
        self.send("notifications/initialized")

    def send(
        self, method: str, params: dict[str, Any] | None = None, id: int | None = None
    ) -> None:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        if id is not None:
            message["id"] = id
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(message) + "\n")
        self.process.stdin.flush()

    def receive(self) -> dict[str, Any]:
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        assert line, "the server closed its stdout"
        message: dict[str, Any] = json.loads(line)
        return message

    def call_run(self) -> None:
        """Call run(goal) and return once its plan's progress says the step works."""
        params = {"name": "run", "arguments": {"goal": "wait"}, "_meta": {"progressToken": 1}}
        self.send("tools/call", params, 2)
        assert self.receive()["method"] == "notifications/progress"

    def ended(self) -> tuple[int, str, list[dict[str, Any]]]:
        """The exit code, what it said on stderr, and what else it wrote on stdout."""
        assert self.process.stdout is not None
        assert self.process.stderr is not None
        rest = [json.loads(line) for line in self.process.stdout]
        return self.process.wait(timeout=60), self.process.stderr.read(), rest

    def close(self) -> None:
        if self.process.stdin is not None and not self.process.stdin.closed:
            self.process.stdin.close()
        stop(self.process)


async def _listed(journal: Path) -> list[str]:
    """The runs' statuses, newest first, as ``regiment runs`` lists them (read here, in
    this process: a ``regiment runs`` child cost a Python start per look)."""
    opened = await open_journal(str(journal), read_only=True)
    try:
        return [info.status for info in await opened.list_runs()]
    finally:
        await opened.close()


def _statuses(journal: Path) -> list[str]:
    return anyio.run(_listed, journal)


def _cut_short(answer: dict[str, Any]) -> str:
    result = answer["result"]
    assert (answer["id"], result["isError"]) == (2, True)
    text: str = result["content"][0]["text"]
    return text


@BACKENDS
@pytest.mark.parametrize(("signum", "code"), [(signal.SIGTERM, 0), (signal.SIGINT, 130)])
def test_a_signal_cancels_the_call_in_flight(
    tmp_path: Path, backend: str, signum: int, code: int
) -> None:
    journal = tmp_path / "runs.db"
    client = _Client(write_team(tmp_path, "stuck"), backend, "--journal", str(journal))
    try:
        client.call_run()
        client.process.send_signal(signum)
        got, said, rest = client.ended()
    finally:
        client.close()
    assert (got, said) == (code, "regiment: interrupted\n" if code else "")
    (answer,) = rest
    assert STOPPING in _cut_short(answer)
    assert _statuses(journal) == ["cancelled"]


def test_a_second_signal_exits_at_once(tmp_path: Path) -> None:
    # The step's tool swallows its cancel, so the team's stop waits for it.
    client = _Client(write_napping_team(tmp_path, "doze"), "asyncio")
    try:
        client.call_run()
        assert client.process.stderr is not None
        assert client.process.stderr.readline() == "napping\n"  # the tool runs
        client.process.send_signal(signal.SIGTERM)
        assert STOPPING in _cut_short(client.receive())  # then the team's stop holds
        client.process.send_signal(signal.SIGTERM)
        got, said, _ = client.ended()
    finally:
        client.close()
    assert got == 143  # 128 + SIGTERM, the signal that forced it
    assert said.endswith("regiment: interrupted; exiting without waiting\n"), said


@BACKENDS
def test_the_client_closing_stdin_still_ends_it(tmp_path: Path, backend: str) -> None:
    journal = tmp_path / "runs.db"
    client = _Client(write_team(tmp_path, "stuck"), backend, "--journal", str(journal))
    try:
        client.call_run()
        assert client.process.stdin is not None
        client.process.stdin.close()
        got, said, _ = client.ended()
    finally:
        client.close()
    assert (got, said) == (0, "")
    assert _statuses(journal) == ["cancelled"]


@BACKENDS
def test_the_client_closing_its_stdout_ends_it(tmp_path: Path, backend: str) -> None:
    # It served on, its run too, with no one to answer (until killed).
    journal = tmp_path / "runs.db"
    client = _Client(write_team(tmp_path, "stuck"), backend, "--journal", str(journal))
    try:
        client.call_run()
        assert client.process.stdout is not None
        client.process.stdout.close()
        client.send("tools/list", None, 3)  # its answer finds no reader
        got = client.process.wait(timeout=60)
        assert client.process.stderr is not None
        said = client.process.stderr.read()
    finally:
        client.close()
    assert (got, said) == (0, "")
    assert _statuses(journal) == ["cancelled"]


@BACKENDS
def test_requests_written_before_stdin_closes_are_answered(tmp_path: Path, backend: str) -> None:
    # All of stdin is there at once, then its end: the quick answers still come.
    hello = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t"}}
    requests = tmp_path / "requests.jsonl"
    requests.write_text(
        json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": hello})
        + "\n"
        + json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"})
        + "\n"
        + json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),  # no newline
        encoding="utf-8",
    )
    team = write_team(tmp_path, "stuck")
    with requests.open(encoding="utf-8") as stdin:
        done = subprocess.run(
            [sys.executable, "-m", "regiment", "mcp", str(team), "--backend", backend],
            stdin=stdin,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
            cwd=tmp_path,
        )
    answers = [json.loads(line) for line in done.stdout.splitlines()]
    assert [a["id"] for a in answers] == [1, 2], done.stderr
    assert [t["name"] for t in answers[1]["result"]["tools"]] == ["run"]
    assert (done.returncode, done.stderr) == (0, "")


@BACKENDS
def test_a_tool_cannot_touch_the_wire_and_sigterm_while_idle_exits_0(
    tmp_path: Path, backend: str
) -> None:
    # One server for both (a Python start each cost more than the rest of either): its
    # run done, it idles until SIGTERM, then exits 0 saying nothing of its own. (A
    # client's closing stdin while it idles: test_requests_written_before_stdin_closes.)
    (tmp_path / "loud.py").write_text(LOUD, encoding="utf-8")
    team = tmp_path / "team.toml"
    team.write_text(
        'name = "loud"\nmodel = "scripted"\nbrain = "loud:brain"\n\n[[workers]]\n'
        'name = "shouter"\ndescription = "Shouts."\ntools = ["loud:shout"]\n',
        encoding="utf-8",
    )
    client = _Client(team, backend)
    try:
        client.send("tools/call", {"name": "run", "arguments": {"goal": "shout"}}, 2)
        answer = client.receive()  # the stray line went to stderr, not here
        client.process.send_signal(signal.SIGTERM)
        got, said, rest = client.ended()
    finally:
        client.close()
    assert not answer["result"]["isError"], answer
    assert "read 0 characters" in answer["result"]["content"][0]["text"]  # /dev/null
    assert (got, said, rest) == (0, "a stray line\n", [])


def _close_stdin() -> None:
    os.close(0)


def test_a_closed_stdin_is_a_clear_usage_error(tmp_path: Path) -> None:
    # It was a traceback (AttributeError: 'NoneType' object has no attribute 'buffer').
    done = subprocess.run(
        [sys.executable, "-m", "regiment", "mcp", str(write_team(tmp_path, "stuck"))],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        cwd=tmp_path,
        preexec_fn=_close_stdin,
    )
    assert done.returncode == 2
    assert done.stderr.endswith(
        "regiment: error: regiment mcp serves over its stdin and stdout, and one of them is "
        "closed: let an MCP client start it (it gives it pipes), or serve over HTTP with "
        "--http PORT\n"
    ), done.stderr


def test_its_pipes_are_left_blocking(tmp_path: Path) -> None:
    # It reads and writes them non-blocking while it serves; another holder of the
    # same pipes (here this test) must find them as they were.
    read_in, write_in = os.pipe()
    read_out, write_out = os.pipe()
    team = write_team(tmp_path, "stuck")
    try:
        process = subprocess.Popen(
            [sys.executable, "-m", "regiment", "mcp", str(team)],
            stdin=read_in,
            stdout=write_out,
            cwd=tmp_path,
            preexec_fn=die_with_parent,
        )
        os.close(write_in)  # the client leaves at once
        assert process.wait(timeout=60) == 0
        assert (os.get_blocking(read_in), os.get_blocking(write_out)) == (True, True)
    finally:
        for fd in (read_in, read_out, write_out):
            os.close(fd)


def _served_by_us() -> psutil.Process:
    (child,) = [
        p for p in psutil.Process().children() if p.cmdline()[1:4] == ["-m", "regiment", "mcp"]
    ]
    return child


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_the_sdk_client_is_told_the_server_stops(tmp_path: Path) -> None:
    journal = tmp_path / "runs.db"
    team = str(write_team(tmp_path, "stuck"))
    planned, results = anyio.Event(), list[CallToolResult]()

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        planned.set()  # the run's step works now, and waits for ever

    async with served("--app-dir", str(tmp_path), "--journal", str(journal), team=team) as session:
        server = _served_by_us()
        async with anyio.create_task_group() as tg:

            async def call() -> None:
                goal = {"goal": "wait"}
                results.append(await session.call_tool("run", goal, progress_callback=on_progress))

            tg.start_soon(call)
            await planned.wait()
            server.send_signal(signal.SIGTERM)
        await anyio.to_thread.run_sync(server.wait, 60)  # its code is the SDK's to reap
    (result,) = results
    assert result.is_error
    assert STOPPING in text_of(result)
    assert await _listed(journal) == ["cancelled"]


def test_regiments_warnings_show_one_line_each(tmp_path: Path) -> None:
    # Without -v (which `regiment mcp` does not take) only the SDK's warnings had a handler;
    # regiment's went to the RichHandler the SDK put on the root logger, wrapped over many
    # lines of a table (and, with that handler gone, nowhere).
    client = _Client(write_napping_team(tmp_path, "nap"), "asyncio")
    seen: list[str] = []
    try:
        client.call_run()
        read_until(client.process, "napping", seen)  # the sync body runs in its thread
        client.process.send_signal(signal.SIGTERM)
        assert STOPPING in _cut_short(client.receive())
        read_until(client.process, "was cancelled while its body ran in a worker thread", seen)
        client.process.send_signal(signal.SIGTERM)  # the nap would hold the stop a minute
        client.ended()
    finally:
        client.close()
    (line,) = [line for line in seen if "was cancelled while its body" in line]
    assert " WARNING regiment.tools" in line, line
    assert "must stop when its step is cut [run_id=run-" in line, line  # the whole record
    assert line.endswith(" step_id=s1 worker=napper]\n"), line
