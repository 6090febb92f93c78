"""``regiment mcp`` and ``regiment serve`` refuse what they would not use: an argument
they do not take (a second positional, another command's option, ``serve``'s ``--port``
given to ``mcp``), and an option given twice, whose first value was silently dropped.
Each is a usage error, exit 2, before anything starts or serves."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from regiment.cli import run_async

pytestmark = pytest.mark.anyio

REFUND = str(Path(__file__).resolve().parents[2] / "examples" / "refund" / "team.toml")

CASES = {
    "mcp: a second positional": (["mcp", REFUND, "goal"], "unrecognized arguments: goal"),
    "mcp: after --": (["mcp", REFUND, "--", "x"], "unrecognized arguments: x"),
    "mcp: serve's port": (["mcp", REFUND, "--port", "9000"], "unrecognized arguments: --port 9000"),
    "mcp: run's session": (
        ["mcp", REFUND, "--session", "s"],
        "unrecognized arguments: --session s",
    ),
    "mcp: -v": (["mcp", REFUND, "-v"], "unrecognized arguments: -v"),
    "mcp: --http twice": (
        ["mcp", REFUND, "--http", "8001", "--http", "8002"],
        "--http is given twice; give it once (which one was meant?)",
    ),
    "mcp: --journal twice": (
        ["mcp", REFUND, "--journal", "a.db", "--journal=b.db"],
        "--journal is given twice; give it once (which one was meant?)",
    ),
    "mcp: --model twice": (
        ["mcp", REFUND, "--model", "scripted", "--model", "openai:gpt-4o"],
        "--model is given twice; give it once (which one was meant?)",
    ),
    "serve: --token twice": (
        ["serve", REFUND, "--token", "s3cret-one", "--token", "s3cret-two"],
        "--token is given twice; give it once (which one was meant?)",
    ),
    "serve: --port twice": (
        ["serve", REFUND, "--port", "0", "--port", "8000"],
        "--port is given twice; give it once (which one was meant?)",
    ),
}


@pytest.mark.parametrize(("argv", "said"), CASES.values(), ids=CASES.keys())
async def test_a_server_command_refuses_what_it_would_not_use(
    argv: list[str], said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    out, err = io.StringIO(), io.StringIO()
    code = await run_async(argv, stdout=out, stderr=err, environ={})
    assert (code, out.getvalue(), err.getvalue()) == (2, "", "")  # nothing ran
    usage = capsys.readouterr().err  # argparse's own stderr
    assert usage.startswith(f"usage: regiment {argv[0]} ")
    assert usage.splitlines()[-1] == f"regiment: error: {said}; see `regiment {argv[0]} --help`"
    assert "s3cret" not in usage  # a token's value is not echoed


async def test_an_option_given_once_and_a_counted_one_given_twice_are_fine(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # -v -v is -vv; --help still answers (so parsing got past every option).
    argv = ["serve", REFUND, "--port", "0", "--journal", "r.db", "-v", "-v", "--help"]
    code = await run_async(argv, stdout=io.StringIO(), stderr=io.StringIO(), environ={})
    assert code == 0
    assert "exit codes:" in capsys.readouterr().out
