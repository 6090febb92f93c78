"""``regiment show`` of a run cut while its tool ran ends the cut call and its step as
the run's events file does: from the run's closing report, and says so.

Ctrl-C (a real SIGINT to a real ``regiment run`` / ``regiment resume``) while a tool
runs: the events file got the cut call's ``ToolCallFinished`` (``"cut"``) and its step's
end before ``RunFailed``, made from the closing event's step reports, while ``show`` of
the same run (text and ``--json``) gave the call no end at all. A run whose process was
SIGKILLed and that nobody resumed has no closing event: ``show`` leaves what it began
open (no end), rather than cut by a report that does not exist.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from .helpers import read_until, run_cli
from .test_interrupt_ends import _team

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="signals to a child need POSIX")


_CUT = (
    '    call rest({"minutes": 1}) [cut short: started, never finished; what it did before '
    "the cut is not recorded; ended 'cut', from the run's closing report]"
)


def _stopped(argv: list[str], cwd: Path, how: signal.Signals) -> None:
    """``python -m regiment ARGV`` sent ``how`` once the team's tool runs."""
    with subprocess.Popen(
        [sys.executable, "-m", "regiment", *argv],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        cwd=cwd,
    ) as child:
        seen: list[str] = []
        read_until(child, "resting", seen)  # the tool's body runs
        child.send_signal(how)
        _, rest = child.communicate(timeout=60)
    expected = 130 if how == signal.SIGINT else -how
    assert child.returncode == expected, "".join(seen) + rest


def _events(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def _shown(run_id: str, journal: str) -> tuple[list[str], dict[str, Any]]:
    """``regiment show RUN_ID``'s lines and ``--json``'s object. Run in this process (the
    runs it reads were real processes): a child each took 3-6 s on a loaded machine."""

    async def both() -> tuple[tuple[int, str, str], tuple[int, str, str]]:
        text = await run_cli("show", run_id, "--journal", journal)
        return text, await run_cli("show", run_id, "--json", "--journal", journal)

    (code, text, err), (json_code, shown, json_err) = anyio.run(both)
    assert code == 0, err
    assert json_code == 0, json_err
    return text.splitlines(), json.loads(shown)


def _check_same_ends(events: list[dict[str, Any]], lines: list[str], shown: dict[str, Any]) -> None:
    """``show`` ends the cut call and its step as the events file did."""
    assert [e["type"] for e in events][-3:] == ["ToolCallFinished", "StepErrored", "RunFailed"]
    finished, errored = events[-3], events[-2]
    assert shown["status"] == "cancelled"
    (step,) = shown["steps"]
    assert (step["step_id"], step["status"]) == (errored["step_id"], errored["status"])
    assert step["error"] == errored["error"]
    (call,) = step["unfinished_calls"]
    assert (call["call_id"], call["tool"]) == (finished["call_id"], finished["tool"])
    assert (call["outcome"], call["ended_by"]) == (finished["outcome"], "closing_report")
    assert finished["outcome"] == "cut"
    assert _CUT in lines


def _interrupted_run(tmp_path: Path, journal: str, backend: str) -> str:
    """Run the resting team into ``journal``, Ctrl-C once its tool runs; its run id, after
    checking what ``show`` says against its events file."""
    ev = tmp_path / "ev.jsonl"
    argv = ["run", str(_team(tmp_path)), "rest", "--app-dir", str(tmp_path), "--plain"]
    argv += ["--journal", journal, "--backend", backend, "--events", "jsonl"]
    _stopped([*argv, "--events-file", str(ev)], tmp_path, signal.SIGINT)
    events = _events(ev)
    run_id = str(events[0]["run_id"])
    _check_same_ends(events, *_shown(run_id, journal))
    return run_id


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_show_of_an_interrupted_run_ends_its_cut_call_as_its_events_did(
    tmp_path: Path, backend: str
) -> None:
    _interrupted_run(tmp_path, str(tmp_path / "runs.db"), backend)


def test_show_of_an_interrupted_run_on_postgresql(tmp_path: Path, postgres_url: str) -> None:
    _interrupted_run(tmp_path, postgres_url, "asyncio")


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_show_of_a_killed_run_leaves_it_open_then_ends_it_once_resumed_and_cut(
    tmp_path: Path, backend: str
) -> None:
    journal, ev = str(tmp_path / "runs.db"), tmp_path / "ev.jsonl"
    argv = ["run", str(_team(tmp_path)), "rest", "--app-dir", str(tmp_path), "--plain"]
    argv += ["--journal", journal, "--backend", backend, "--events", "jsonl"]
    _stopped([*argv, "--events-file", str(ev)], tmp_path, signal.SIGKILL)
    run_id = str(_events(ev)[0]["run_id"])
    lines, shown = _shown(run_id, journal)
    # No closing event: the step and its call are open, not cut by a report never made.
    assert shown["status"] == "stalled"
    (step,) = shown["steps"]
    assert (step["status"], step["ended_by"], step["error"]) == ("dispatched", None, None)
    (call,) = step["unfinished_calls"]
    assert (call["outcome"], call["ended_by"]) == (None, None)
    assert "  v1 s1 [dispatched, no report]" in lines
    assert (
        '    call rest({"minutes": 1}) [started, no result yet (in flight when the run '
        "stopped, or still running)]"
    ) in lines
    assert not [line for line in lines if "closing report" in line]
    again = tmp_path / "again.jsonl"
    resume = ["resume", run_id, "--journal", journal, "--plain", "--backend", backend]
    _stopped([*resume, "--events", "jsonl", "--events-file", str(again)], tmp_path, signal.SIGINT)
    _check_same_ends(_events(again), *_shown(run_id, journal))
