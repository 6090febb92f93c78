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


def _started_without(fd: int, *args: str) -> subprocess.CompletedProcess[str]:
    """The command started with descriptor ``fd`` closed (``2>&-`` or ``>&-``)."""
    return subprocess.run(
        [sys.executable, "-m", "regiment", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "ANTHROPIC_API_KEY": ""},
        preexec_fn=lambda: os.close(fd),  # after the pipes are in place, before the exec
        timeout=120,
        check=False,
    )


def test_a_closed_stderr_keeps_the_notes_out_of_the_answer() -> None:
    # sys.stderr was None: print(file=None) put the offline note on stdout, before the
    # answer, and the run then failed on stderr.isatty() (exit 1, its traceback lost).
    done = _started_without(2, "run", REFUND, GOAL, "--no-journal")
    assert done.returncode == 0
    assert done.stdout.startswith("Summary of what was done:\n"), done.stdout
    assert "regiment:" not in done.stdout


def test_a_closed_stdout_fails_the_events_without_a_traceback() -> None:
    # The run goes on to its end; the events are lost, which is no success (it exited 0).
    done = _started_without(1, "run", REFUND, GOAL, "--no-journal", "--events", "jsonl")
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr
    assert "] run completed: " in done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("regiment: error: the events could not be written to stdout"), last
