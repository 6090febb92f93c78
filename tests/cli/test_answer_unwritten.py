"""An answer that cannot be written to stdout (``>&-``, a full disk) is not a success:
the command says so on stderr, and where the journal keeps it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="needs POSIX descriptors")

_BRAIN = """
from regiment.models import ModelRequest, ModelResponse, text_response


def brain(request: ModelRequest) -> ModelResponse:
    if request.role in ("planner", "replanner"):
        return text_response('{"steps": [{"id": "s1", "description": "say it"}]}')
    return text_response("forty-two")
"""


def _team(directory: Path) -> Path:
    (directory / "sayer.py").write_text(_BRAIN, encoding="utf-8")
    team = directory / "team.toml"
    team.write_text(
        'name = "sayers"\nmodel = "scripted"\nbrain = "sayer:brain"\n\n'
        '[[workers]]\nname = "w"\ndescription = "Says."\n',
        encoding="utf-8",
    )
    return team


def _run(
    tmp_path: Path, *extra: str, stdout: int | None = None
) -> subprocess.CompletedProcess[str]:
    """``regiment run`` of the team with ``extra`` options; its stdout closed (``>&-``)
    unless ``stdout`` is given."""
    argv = ["run", str(_team(tmp_path)), "say it", "--app-dir", str(tmp_path), *extra]
    return subprocess.run(
        [sys.executable, "-m", "regiment", *argv],
        stdout=stdout,
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
        preexec_fn=None if stdout is not None else (lambda: os.close(1)),
        timeout=120,
        check=False,
    )


@pytest.mark.parametrize("view", [(), ("--plain",)], ids=["answer-at-end", "answer-streamed"])
def test_a_closed_stdout_fails_the_command_and_says_where_the_answer_is(
    tmp_path: Path, view: tuple[str, ...]
) -> None:
    # The answer went to /dev/null in the closed stdout's place, and the command exited 0.
    journal = str(tmp_path / "runs.db")
    done = _run(tmp_path, "--journal", journal, *view)
    assert done.returncode == 1, done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("regiment: error: the answer could not be written to stdout"), last
    assert "stdout is closed" in last
    assert "regiment show run-1-" in last
    assert f"--journal {journal}" in last
    assert "Traceback" not in done.stderr
    run_id = last.split("regiment show ")[1].split()[0]
    shown = subprocess.run(
        [sys.executable, "-m", "regiment", "show", run_id, "--journal", journal],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=60,
        check=True,
    )
    assert "forty-two" in shown.stdout


def test_without_a_journal_it_says_the_answer_is_lost(tmp_path: Path) -> None:
    done = _run(tmp_path, "--no-journal")
    assert done.returncode == 1, done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("regiment: error: the answer could not be written to stdout"), last
    assert "--no-journal kept it out of the journal, so it is lost" in last


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
@pytest.mark.parametrize("view", [(), ("--plain",)], ids=["answer-at-end", "answer-streamed"])
def test_a_full_disk_fails_the_command_without_a_traceback(
    tmp_path: Path, view: tuple[str, ...]
) -> None:
    # Streamed (--plain), the write's OSError came out as a traceback and cut the run.
    journal = str(tmp_path / "runs.db")
    with open("/dev/full", "w", encoding="utf-8") as full:
        done = _run(tmp_path, "--journal", journal, *view, stdout=full.fileno())
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("regiment: error: the answer could not be written to stdout"), last
    assert "No space left on device" in last
    assert "run completed" in done.stderr  # the run was not cut short
