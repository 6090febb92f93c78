"""What ``regiment run --events jsonl``, ``regiment runs`` and ``regiment show`` print
cannot be lost quietly: a stdout the command was started without (``>&-``) or a full
disk fails the command (exit 1) with a line on stderr, as ``run``'s answer does.
Before, the events and listings went into /dev/null (exit 0), or a full disk ended the
command with a traceback."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from .test_answer_unwritten import _run

# Several `python -m regiment` processes a test, one after another: up to 51 s at load ~20,
# near the 60 s default (which kills the xdist worker). The limit guards against a hang.
pytestmark = [
    pytest.mark.skipif(sys.platform == "win32", reason="needs POSIX descriptors"),
    pytest.mark.timeout(240),
]

_FULL = Path("/dev/full")


def _regiment(
    cwd: Path, *argv: str, closed: bool = False, stdout: int | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "regiment", *argv],
        stdout=stdout if stdout is not None or closed else subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=cwd,
        preexec_fn=(lambda: os.close(1)) if closed else None,
        timeout=120,
        check=False,
    )


def test_events_to_a_closed_stdout_fail_the_command_and_say_where_the_run_is(
    tmp_path: Path,
) -> None:
    journal = str(tmp_path / "runs.db")
    done = _run(tmp_path, "--journal", journal, "--events", "jsonl")
    assert done.returncode == 1, done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("regiment: error: the events could not be written to stdout"), last
    assert "stdout is closed" in last
    assert f"--journal {journal}" in last
    assert "Traceback" not in done.stderr
    run_id = last.split("regiment show ")[1].split()[0]
    shown = _regiment(tmp_path, "show", run_id, "--journal", journal)
    assert shown.returncode == 0, shown.stderr
    assert "forty-two" in shown.stdout  # the run went on to its end


@pytest.mark.skipif(not _FULL.exists(), reason="needs /dev/full")
def test_events_to_a_full_disk_fail_the_command_without_a_traceback(tmp_path: Path) -> None:
    with _FULL.open("w", encoding="utf-8") as full:
        done = _run(tmp_path, "--no-journal", "--events", "jsonl", stdout=full.fileno())
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("regiment: error: the events could not be written to stdout"), last
    assert "No space left on device" in last
    assert "--no-journal kept it out of the journal, so it is lost" in last


def test_events_to_a_file_are_not_affected_by_a_closed_stdout(tmp_path: Path) -> None:
    events = tmp_path / "events.jsonl"
    done = _run(tmp_path, "--no-journal", "--events", "jsonl", "--events-file", str(events))
    # The answer goes to stdout then, and that is what is lost.
    assert done.returncode == 1, done.stderr
    assert "the answer could not be written to stdout" in done.stderr
    assert '"type":"RunCompleted"' in events.read_text(encoding="utf-8")


@pytest.mark.parametrize("json", [(), ("--json",)], ids=["lines", "json"])
@pytest.mark.parametrize("command", ["runs", "show"])
def test_runs_and_show_to_a_closed_or_full_stdout_fail_the_command(
    tmp_path: Path, command: str, json: tuple[str, ...]
) -> None:
    journal = str(tmp_path / "runs.db")
    ran = _run(tmp_path, "--journal", journal, stdout=subprocess.DEVNULL)
    assert ran.returncode == 0, ran.stderr
    listed = _regiment(tmp_path, "runs", "--journal", journal)
    run_id = listed.stdout.split()[0]
    argv = (command, *((run_id,) if command == "show" else ()), "--journal", journal, *json)
    fine = _regiment(tmp_path, *argv)
    assert fine.returncode == 0, fine.stderr
    assert run_id in fine.stdout
    outs: list[tuple[str, subprocess.CompletedProcess[str]]] = [
        ("stdout is closed", _regiment(tmp_path, *argv, closed=True))
    ]
    if _FULL.exists():
        with _FULL.open("w", encoding="utf-8") as full:
            outs.append(
                ("No space left on device", _regiment(tmp_path, *argv, stdout=full.fileno()))
            )
    for why, done in outs:
        assert done.returncode == 1, (why, done.stderr)
        assert "Traceback" not in done.stderr
        assert done.stderr.strip() == (
            f"regiment: error: the {command} output could not be written to stdout ({why}); "
            "run it again with a stdout that can be written"
        )


_REPO = Path(__file__).resolve().parents[2]  # the team file's brain imports from here
_REFUNDS = _REPO / "examples" / "refund" / "team_approval.toml"


def _failed_writes(
    cwd: Path,
    argv: tuple[str, ...],
    name: str,
    then: str = "run it again with a stdout that can be written",
) -> list[subprocess.CompletedProcess[str]]:
    """``argv`` to a closed stdout and to a full disk: each exit 1 with one stderr line."""
    outs = [("stdout is closed", _regiment(cwd, *argv, closed=True))]
    if _FULL.exists():
        with _FULL.open("w", encoding="utf-8") as full:
            outs.append(("No space left on device", _regiment(cwd, *argv, stdout=full.fileno())))
    for why, done in outs:
        assert done.returncode == 1, (why, done.stderr)
        assert done.stderr.strip().splitlines()[-1] == (
            f"regiment: error: the {name} output could not be written to stdout ({why}); {then}"
        )
        assert "Traceback" not in done.stderr
    return [done for _, done in outs]


def test_validate_to_a_closed_or_full_stdout_fails(tmp_path: Path) -> None:
    argv = ("validate", str(_REFUNDS))
    fine = _regiment(_REPO, *argv)
    assert fine.returncode == 0, fine.stderr
    assert ": ok, team 'refunds'" in fine.stdout
    _failed_writes(_REPO, argv, "validate")
    bad = _regiment(_REPO, "validate", str(tmp_path / "nope.toml"), closed=True)
    assert bad.returncode == 2  # its config error first, as before


def test_approvals_and_approve_to_a_closed_or_full_stdout_fail(tmp_path: Path) -> None:
    journal = str(tmp_path / "runs.db")
    goal = "For order 77120 check refund eligibility, issue the refund if eligible, then email."
    ran = _regiment(_REPO, "run", str(_REFUNDS), goal, "--model", "scripted", "--journal", journal)
    assert ran.returncode == 3, ran.stderr  # paused for an approval
    listed = _regiment(_REPO, "approvals", "--json", "--journal", journal)
    assert listed.returncode == 0, listed.stderr
    row = json.loads(listed.stdout)
    _failed_writes(_REPO, ("approvals", "--json", "--journal", journal), "approvals")
    argv = ("approve", row["run_id"], row["request_id"], "--journal", journal)
    recorded = "the decision was recorded all the same (regiment approvals lists what waits)"
    closed = _regiment(_REPO, *argv, "--by", "ana", closed=True)
    assert closed.returncode == 1, closed.stderr
    assert closed.stderr.strip() == (
        "regiment: error: the approve output could not be written to stdout (stdout is "
        f"closed); {recorded}"
    )
    # the first one's decision was recorded all the same: the next is refused as decided,
    # and, having printed nothing to stdout, it does not say its output was lost
    again = _regiment(_REPO, *argv, closed=True)
    assert again.returncode == 2
    assert "already decided" in again.stderr
    assert "could not be written" not in again.stderr
