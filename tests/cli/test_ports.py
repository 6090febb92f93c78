"""A port the command cannot serve on is a usage error (one line, exit 2), not a traceback."""

from __future__ import annotations

import io
import socket
import sys
from pathlib import Path

import pytest

from regiment.cli import run_async

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parents[2]
REFUND = str(ROOT / "examples" / "refund" / "team.toml")


@pytest.fixture(autouse=True)
def _restore_sys_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "path", list(sys.path))  # the command adds --app-dir to it


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
