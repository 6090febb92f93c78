"""Usage errors the command catches before any run: ports it cannot serve on, a team that
cannot start. One line and exit 2, not a traceback or "run failed"."""

from __future__ import annotations

import io
import socket
from pathlib import Path

import pytest

from regiment.cli import run_async

from .helpers import write_team

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parents[2]
REFUND = str(ROOT / "examples" / "refund" / "team.toml")


@pytest.mark.parametrize(
    "argv",
    [
        ["serve", REFUND, "--port", "99999"],
        ["serve", REFUND, "--port", "-1"],
        ["mcp", REFUND, "--http", "70000"],
    ],
    ids=["serve-high", "serve-negative", "mcp-high"],
)
async def test_a_port_out_of_range_is_a_usage_error(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    code = await run_async(argv, stdout=io.StringIO(), stderr=io.StringIO(), environ={})
    assert code == 2
    assert "is not a port: use 0 to 65535" in capsys.readouterr().err  # argparse's own stderr


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_mcp_over_http_on_a_taken_port_says_what_to_do() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        err = io.StringIO()
        argv = ["mcp", REFUND, "--http", str(port), "--model", "scripted", "--app-dir", str(ROOT)]
        code = await run_async(argv, stdout=io.StringIO(), stderr=err, environ={})
    assert code == 2
    assert err.getvalue().splitlines()[-1] == (
        f"regiment: error: cannot serve MCP on 127.0.0.1:{port} (Address already in use): "
        "pick another --http port (0 takes a free one), or stop what holds it"
    )


async def test_a_team_whose_mcp_server_cannot_start_is_a_config_error(tmp_path: Path) -> None:
    # Nothing ran: exit 2 with what to fix, not "run failed" (exit 1).
    team = write_team(tmp_path, "garbage")
    text = team.read_text(encoding="utf-8")
    team.write_text(text + '\n[[workers.mcp]]\ncommand = ["/no/such/server"]\n', encoding="utf-8")
    err = io.StringIO()
    argv = ["run", str(team), "go", "--app-dir", str(tmp_path), "--no-journal"]
    code = await run_async(argv, stdout=io.StringIO(), stderr=err, environ={})
    assert code == 2, err.getvalue()
    last = err.getvalue().splitlines()[-1]
    # the file, the line of the server's entry, and the entry (as validate names them)
    line = len(text.splitlines()) + 2  # the [[workers.mcp]] header, after a blank line
    start = f"regiment: error: {team}:{line}: workers[0].mcp[0]: the team could not start: "
    assert last.startswith(f"{start}MCP server"), last
    assert "/no/such/server" in last
