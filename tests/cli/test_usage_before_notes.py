"""A usage error of ``regiment run`` is its only output: it came after the note that the
run goes offline on the team's scripted brain, which told of a run that never started."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from .helpers import regiment_process

ROOT = Path(__file__).resolve().parents[2]
REFUND = str(ROOT / "examples" / "refund" / "team.toml")
NO_KEYS = {"ANTHROPIC_API_KEY": "", "OPENAI_API_KEY": "", "REGIMENT_JOURNAL": ""}


@pytest.mark.parametrize(
    ("argv", "line"),
    [
        (["run", REFUND, ""], "regiment: error: the goal is empty; say what the team should do"),
        (["run", REFUND, "  "], "regiment: error: the goal is empty; say what the team should do"),
        (
            ["run", REFUND, "order \udcff88213", "--no-journal"],
            "regiment: error: the goal is not valid text: '\\udcff' at position 6 is a lone "
            "surrogate (bytes that were not UTF-8, decoded with surrogateescape?)",
        ),
        (
            ["run", REFUND, "go", "--events", "jsonl", "--events-file", REFUND, "--no-journal"],
            f"regiment: error: --events-file {REFUND}: that is the team file {REFUND}",
        ),
    ],
    ids=["empty", "blank", "surrogate", "events-file-is-team-file"],
)
def test_a_usage_error_is_the_only_output(argv: list[str], line: str, tmp_path: Path) -> None:
    args = [os.fsencode(a).decode("utf-8", "surrogateescape") for a in argv]
    done = regiment_process(*args, "--app-dir", str(ROOT), cwd=tmp_path, env=NO_KEYS)
    assert done.returncode == 2, done.stderr
    (only,) = done.stderr.splitlines()  # no "running offline" note before it
    assert only.startswith(line), only
    assert done.stdout == ""
    assert not (tmp_path / ".regiment").exists()  # no journal made for a run that never was


def test_a_team_that_cannot_be_built_is_the_only_output(tmp_path: Path) -> None:
    # No --app-dir, run from elsewhere: the team's tools cannot be imported, so no run starts.
    done = regiment_process("run", REFUND, "go", "--no-journal", cwd=tmp_path, env=NO_KEYS)
    assert done.returncode == 2, done.stderr
    (only,) = done.stderr.splitlines()
    assert only.startswith(f"regiment: error: {REFUND}:18: workers[0].tools[0]: cannot import")


def test_a_run_that_starts_still_says_it_runs_offline(tmp_path: Path) -> None:
    goal = "For order 88213 check refund eligibility"
    done = regiment_process(
        "run", REFUND, goal, "--no-journal", "--app-dir", str(ROOT), cwd=tmp_path, env=NO_KEYS
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr.startswith(
        "regiment: no ANTHROPIC_API_KEY and no --model, so running offline"
    )
