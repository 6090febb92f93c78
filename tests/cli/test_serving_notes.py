"""``regiment serve`` and ``regiment mcp`` said they ran offline on the team's scripted brain
before the team was built or the options checked, so a refusal (a tool that cannot be
imported, ``--keep-runs 0``, a taken port) came after a line that told of a server that
never served. The note now comes once it serves, after any refusal, which is the only line."""

from __future__ import annotations

import io
import socket
from pathlib import Path

import anyio
import pytest

from regiment.cli import run_async
from tests.serve.cli_serving import Log

pytestmark = pytest.mark.anyio


ROOT = Path(__file__).resolve().parents[2]
REFUND = str(ROOT / "examples" / "refund" / "team.toml")
NOTE = "regiment: no ANTHROPIC_API_KEY and no --model, so running offline on the team's scripted"


def _unimportable(directory: Path) -> Path:
    """The refund team file with a tool that is not there."""
    text = Path(REFUND).read_text(encoding="utf-8").replace(":check_eligibility", ":no_such_tool")
    team = directory / "team.toml"
    team.write_text(text, encoding="utf-8")
    return team


async def _only_line(argv: list[str]) -> str:
    err = io.StringIO()
    code = await run_async(argv, stdout=io.StringIO(), stderr=err, environ={})
    assert code == 2, err.getvalue()
    (only,) = err.getvalue().splitlines()  # no note before it
    return only


@pytest.mark.parametrize("command", ["serve", "mcp"])
async def test_a_team_that_cannot_be_built_is_the_only_line(command: str, tmp_path: Path) -> None:
    team = _unimportable(tmp_path)
    only = await _only_line([command, str(team), "--app-dir", str(ROOT)])
    assert only.startswith(f"regiment: error: {team}:18: workers[0].tools[0]: cannot import"), only


@pytest.mark.parametrize(
    ("flags", "said"),
    [
        (["--keep-runs", "0"], "regiment: error: --keep-runs 0: keep at least the last ended run"),
        (["--host", "0.0.0.0"], "regiment: error: refusing to serve on 0.0.0.0 without a token"),
        (["--lease-ttl", "5"], "regiment: error: --lease-ttl is how long a journaled run"),
    ],
    ids=["keep-runs", "public-host", "lease-ttl"],
)
@pytest.mark.parametrize("anyio_backend", ["asyncio"])  # `serve` runs on asyncio only
async def test_a_refused_serve_is_the_only_line(flags: list[str], said: str) -> None:
    only = await _only_line(["serve", REFUND, "--app-dir", str(ROOT), "--port", "0", *flags])
    assert only.startswith(said), only


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_a_serve_on_a_taken_port_does_not_say_it_runs(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = str(taken.getsockname()[1])
        err = io.StringIO()
        argv = ["serve", REFUND, "--app-dir", str(ROOT), "--port", port]
        code = await run_async(argv, stdout=io.StringIO(), stderr=err, environ={})
    assert code == 2
    said = err.getvalue()
    assert said.splitlines()[-1].startswith(f"regiment: error: could not serve on 127.0.0.1:{port}")
    assert "running offline" not in said, said


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_mcp_over_http_on_a_taken_port_is_the_only_line() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = str(taken.getsockname()[1])
        only = await _only_line(["mcp", REFUND, "--app-dir", str(ROOT), "--http", port])
    assert only.startswith(f"regiment: error: cannot serve MCP on 127.0.0.1:{port}"), only


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_a_serve_that_listens_says_it_runs_offline() -> None:
    err, stop = Log(), anyio.Event()
    argv = ["serve", REFUND, "--app-dir", str(ROOT), "--port", "0"]
    async with anyio.create_task_group() as tg:

        async def serve() -> None:
            code = await run_async(
                argv, stdout=io.StringIO(), stderr=err, environ={}, interrupt=stop
            )
            assert code == 0, err.getvalue()

        tg.start_soon(serve)
        await err.ready.wait()  # uvicorn says it listens: the note follows in the same turn
        stop.set()
    lines = err.getvalue().splitlines()
    (note,) = (n for n, line in enumerate(lines) if line.startswith(NOTE))
    listening = next(n for n, line in enumerate(lines) if "Uvicorn running on" in line)
    assert note > listening, lines


class _Said(io.StringIO):
    """stderr that sets ``ready`` once the MCP server says where it serves."""

    def __init__(self) -> None:
        super().__init__()
        self.ready = anyio.Event()

    def write(self, text: str) -> int:
        if "regiment: serving team" in text:
            self.ready.set()
        return super().write(text)


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_mcp_over_http_says_it_runs_offline_once_it_listens() -> None:
    err, stop = _Said(), anyio.Event()
    argv = ["mcp", REFUND, "--app-dir", str(ROOT), "--http", "0"]
    async with anyio.create_task_group() as tg:

        async def serve() -> None:
            code = await run_async(
                argv, stdout=io.StringIO(), stderr=err, environ={}, interrupt=stop
            )
            assert code == 0, err.getvalue()

        tg.start_soon(serve)
        await err.ready.wait()
        stop.set()
    lines = err.getvalue().splitlines()
    assert lines[0].startswith(NOTE), lines
    assert lines[1].startswith("regiment: serving team 'refunds' at http://127.0.0.1:"), lines
