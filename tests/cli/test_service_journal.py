"""Issue #16: "all commands take ``--journal PATH_OR_URL``, default ``$REGIMENT_JOURNAL``
... ``--no-journal`` turns it off". ``regiment serve`` and ``regiment mcp`` read
``--journal`` only: with ``$REGIMENT_JOURNAL`` set for every other command, the service
kept its runs in memory, so ``regiment runs`` and ``regiment approvals`` there never saw
them, and ``--no-journal`` was a usage error. Now they journal to ``$REGIMENT_JOURNAL``
when no ``--journal`` is given (none, as before, when it is unset), and take
``--no-journal``."""

from __future__ import annotations

import io
import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import httpx2
import pytest

from regiment.cli import run_async

from .helpers import read_until, regiment_process

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parents[2]
REFUND = str(ROOT / "examples" / "refund" / "team.toml")
GOAL = "For order 88213 check refund eligibility, issue the refund if eligible, then email the customer."


def test_serve_journals_to_the_variable(tmp_path: Path) -> None:
    journal = str(tmp_path / "runs.db")
    env = {k: v for k, v in os.environ.items() if k != "REGIMENT_JOURNAL"}
    argv = [sys.executable, "-m", "regiment", "serve", REFUND, "--model", "scripted"]
    with subprocess.Popen(
        [*argv, "--port", "0"],
        cwd=ROOT,
        env={**env, "REGIMENT_JOURNAL": journal},
        stdin=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    ) as child:
        try:
            seen: list[str] = []
            read_until(child, "Uvicorn running on", seen)
            found = re.search(r"http://127\.0\.0\.1:(\d+)", seen[-1])
            assert found, seen
            url = f"http://127.0.0.1:{found.group(1)}/runs?wait=true"
            answer = httpx2.post(url, json={"goal": GOAL}, timeout=60).json()
            assert answer["status"] == "completed", answer
        finally:
            child.send_signal(signal.SIGTERM)
            child.communicate(timeout=60)
    assert child.returncode == 0
    listed = regiment_process("runs", "--json", cwd=tmp_path, env={"REGIMENT_JOURNAL": journal})
    assert listed.returncode == 0, listed.stderr
    (run,) = [json.loads(line) for line in listed.stdout.splitlines()]
    assert (run["run_id"], run["status"]) == (answer["run_id"], "completed")


@pytest.mark.parametrize("command", ["serve", "mcp"])
async def test_a_variable_that_names_no_journal_is_an_error_naming_it(
    command: str, tmp_path: Path
) -> None:
    """Before, the variable was not read: ``serve`` served and ``mcp`` read its (empty)
    stdin and exited 0."""
    garbage = tmp_path / "notes.txt"
    garbage.write_text("not a journal\n", encoding="utf-8")
    err = io.StringIO()
    code = await run_async(
        [command, REFUND, "--model", "scripted", *(["--port", "0"] if command == "serve" else [])],
        stdout=io.StringIO(),
        stderr=err,
        environ={"REGIMENT_JOURNAL": str(garbage)},
        stdin=io.StringIO(""),
    )
    assert code == 2, err.getvalue()
    last = err.getvalue().splitlines()[-1]
    assert last.startswith(f"regiment: error: $REGIMENT_JOURNAL {garbage}: "), last
    assert "is not a regiment journal" in last
    assert garbage.read_text(encoding="utf-8") == "not a journal\n"  # left untouched


@pytest.mark.parametrize("command", ["serve", "mcp"])
async def test_no_journal_leaves_the_variable_alone(command: str, tmp_path: Path) -> None:
    """``--no-journal`` was a usage error; with it the variable is not read (the ``mcp``
    here ends as its stdin does, having journaled nothing)."""
    garbage = tmp_path / "notes.txt"
    garbage.write_text("not a journal\n", encoding="utf-8")
    if command == "serve":  # the usage says the two go apart
        done = regiment_process("serve", REFUND, "--journal", "x.db", "--no-journal", cwd=tmp_path)
        assert done.returncode == 2
        assert "argument --no-journal: not allowed with argument --journal" in done.stderr
        return
    code, err = await _cli(
        ["mcp", REFUND, "--model", "scripted", "--no-journal"], REGIMENT_JOURNAL=str(garbage)
    )
    assert code == 0, err
    assert "REGIMENT_JOURNAL" not in err


async def _cli(argv: list[str], **environ: str) -> tuple[int, str]:
    err = io.StringIO()
    code = await run_async(
        argv, stdout=io.StringIO(), stderr=err, environ=environ, stdin=io.StringIO("")
    )
    return code, err.getvalue()
