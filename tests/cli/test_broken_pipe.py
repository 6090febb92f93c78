"""A reader that closes the command's stdout (``regiment runs | head -1``) stops the
command quietly with exit 141, as SIGPIPE would, not with a traceback."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli.helpers import with_stdout_closed

ROOT = Path(__file__).resolve().parents[2]
REFUND = str(ROOT / "examples" / "refund" / "team.toml")
GOAL = "For order 88213 check refund eligibility, issue the refund if eligible, then email the customer."


def _with_stdout_closed(*args: str) -> subprocess.CompletedProcess[str]:
    return with_stdout_closed(
        [sys.executable, "-m", "regiment", *args], env={**os.environ, "ANTHROPIC_API_KEY": ""}
    )


@pytest.mark.parametrize(
    "args",
    [
        ("validate", REFUND),
        ("run", REFUND, GOAL, "--no-journal", "--events", "jsonl"),
        ("run", REFUND, GOAL, "--no-journal", "--plain"),
    ],
    ids=["validate", "run-events", "run-answer"],
)
def test_a_closed_stdout_ends_the_command_quietly(args: tuple[str, ...]) -> None:
    done = _with_stdout_closed(*args)
    assert done.returncode == 141, done.stderr
    assert "Traceback" not in done.stderr
    assert "BrokenPipeError" not in done.stderr


def test_runs_with_a_closed_stdout_ends_quietly(tmp_path: Path) -> None:
    journal = str(tmp_path / "runs.db")
    made = subprocess.run(
        [sys.executable, "-m", "regiment", "run", REFUND, GOAL, "--journal", journal],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "ANTHROPIC_API_KEY": ""},
        timeout=120,
        check=False,
    )
    assert made.returncode == 0, made.stderr
    done = _with_stdout_closed("runs", "--journal", journal)
    assert done.returncode == 141, done.stderr
    assert "Traceback" not in done.stderr
