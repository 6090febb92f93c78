"""``regiment serve`` and ``regiment mcp`` while their team starts.

A team whose MCP server will not start was, for ``serve``, a lifespan traceback from
uvicorn and ``could not serve on 127.0.0.1:0 (uvicorn exited 3 ...): check --host and
--port``; for ``mcp``, ``the MCP server stopped: ToolError: ...`` and exit 1. Both now say
what ``run`` says: one line naming the team file's entry of that server, exit 2.

A Ctrl-C (or SIGTERM) while the team started (an MCP server, Ray replicas coming up) was
not heard until the start ended: the server's whole ``start_timeout`` (30 s by default,
120 s for Ray), then a start error. It now cancels the start, as it does for ``run``."""

from __future__ import annotations

import io
import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from regiment.cli import run_async

from .helpers import read_until, write_team

ROOT = Path(__file__).resolve().parents[2]


def _with_server(directory: Path, code: str, *, start_timeout: int = 30) -> Path:
    """A one-worker team file whose worker has one MCP server running ``code``."""
    team = write_team(directory, "idle")
    command = json.dumps([sys.executable, "-c", code])
    with team.open("a", encoding="utf-8") as file:
        file.write(
            f'\n[[workers.mcp]]\nname = "held"\ncommand = {command}\n'
            f"start_timeout = {start_timeout}\n"
        )
    return team


async def _only_line(argv: list[str], tmp_path: Path) -> None:
    team = _with_server(tmp_path, "import sys; sys.exit(3)")
    command, *flags = argv
    err = io.StringIO()
    code = await run_async(
        [command, str(team), *flags, "--app-dir", str(tmp_path)],
        stdout=io.StringIO(),
        stderr=err,
        environ={},
    )
    assert code == 2, err.getvalue()
    (only,) = err.getvalue().splitlines()  # no traceback, no uvicorn log, no note
    assert only.startswith(
        f"regiment: error: {team}:13: workers[0].mcp[0]: the team could not start: "
        "MCP server 'held' ("
    ), only
    assert "could not be started" in only


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])  # uvicorn: asyncio only
@pytest.mark.parametrize(
    "argv", [["serve", "--port", "0"], ["mcp", "--http", "0"]], ids=["serve", "mcp-http"]
)
async def test_a_server_that_will_not_start_is_one_line_naming_its_entry(
    argv: list[str], tmp_path: Path
) -> None:
    await _only_line(argv, tmp_path)


@pytest.mark.anyio
async def test_mcp_over_stdio_names_the_entry_of_a_server_that_will_not_start(
    tmp_path: Path,
) -> None:
    await _only_line(["mcp"], tmp_path)


@pytest.mark.skipif(sys.platform == "win32", reason="signals to a child need POSIX")
@pytest.mark.parametrize(
    ("argv", "signum", "code"),
    [
        (["serve", "--port", "0"], signal.SIGINT, 130),
        (["mcp"], signal.SIGINT, 130),
        (["mcp", "--http", "0"], signal.SIGTERM, 0),
    ],
    ids=["serve-sigint", "mcp-stdio-sigint", "mcp-http-sigterm"],
)
def test_a_signal_while_the_team_starts_stops_the_start(
    argv: list[str], signum: signal.Signals, code: int, tmp_path: Path
) -> None:
    # The server says it started, then never answers: the team starts until start_timeout.
    slow = 'import sys, time; print("starting", file=sys.stderr, flush=True); time.sleep(600)'
    team = _with_server(tmp_path, slow, start_timeout=300)
    command, *flags = argv
    with subprocess.Popen(
        [sys.executable, "-m", "regiment", command, str(team), *flags, "--app-dir", str(tmp_path)],
        stdin=subprocess.PIPE,  # held open: an MCP client that stays
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
    ) as child:
        seen: list[str] = []
        read_until(child, "starting", seen)
        child.send_signal(signum)
        try:
            returncode = child.wait(timeout=45)  # it used to wait out the 300 s start
        finally:
            child.kill()
        assert child.stderr is not None
        said = "".join(seen) + child.stderr.read()
    assert returncode == code, said
    assert "could not be started" not in said
    assert "Traceback" not in said
    if signum == signal.SIGINT:
        assert said.splitlines()[-1] == "regiment: interrupted", said
