"""Ctrl-C while a tool runs: the events close the cut tool call and its step before the
closing ``RunFailed``, as the README says the events carry every call's start and finish."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from .helpers import read_until

DROWSY = '''
import json
import sys

import anyio

from regiment.models import ModelRequest, ModelResponse, ToolCallPart, text_response
from regiment.tools import tool


@tool
async def rest(minutes: int) -> str:
    """Sleeps (a cancel stops it)."""
    print("resting", file=sys.stderr, flush=True)
    await anyio.sleep(minutes * 60)
    return "rested"


def brain(request: ModelRequest) -> ModelResponse:
    if request.role in ("planner", "replanner"):
        return text_response(json.dumps({"steps": [{"description": "take a rest"}]}))
    if request.role != "worker" or len(request.messages) > 1:
        return text_response("done")
    call = ToolCallPart(id="r1", name=request.tools[0].name, arguments={"minutes": 1})
    return ModelResponse(parts=(call,), stop_reason="tool_use", model="scripted")
'''


def _team(directory: Path) -> Path:
    (directory / "drowsy.py").write_text(DROWSY, encoding="utf-8")
    team = directory / "team.toml"
    team.write_text(
        'name = "resters"\nmodel = "scripted"\nbrain = "drowsy:brain"\n\n[[workers]]\n'
        'name = "rester"\ndescription = "Rests."\ntools = ["drowsy:rest"]\n',
        encoding="utf-8",
    )
    return team


def _interrupted(tmp_path: Path, backend: str, *events: str) -> tuple[str, str]:
    """``regiment run`` of the resting team, SIGINT once its tool runs: stdout, stderr."""
    argv = ["run", str(_team(tmp_path)), "rest", "--app-dir", str(tmp_path), "--no-journal"]
    argv += ["--plain", "--backend", backend, "--events", "jsonl", *events]
    with subprocess.Popen(
        [sys.executable, "-m", "regiment", *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
    ) as child:
        seen: list[str] = []
        read_until(child, "resting", seen)  # the tool's body runs
        child.send_signal(signal.SIGINT)
        out, rest = child.communicate(timeout=60)
        assert child.returncode == 130, "".join(seen) + rest
    return out, "".join(seen) + rest


def _check_ends(lines: list[str]) -> None:
    events = [json.loads(line) for line in lines]
    kinds = [e["type"] for e in events]
    assert kinds[:4] == ["RunStarted", "PlanCreated", "StepDispatched", "ToolCallStarted"]
    assert kinds[-3:] == ["ToolCallFinished", "StepErrored", "RunFailed"], kinds
    started, finished, errored, failed = events[3], events[-3], events[-2], events[-1]
    assert finished["call_id"] == started["call_id"] == "r1"
    assert (finished["step_id"], finished["tool"]) == (started["step_id"], started["tool"])
    assert finished["arguments"] == {"minutes": 1}
    assert finished["outcome"] == "cut"
    assert finished["duration"] >= 0
    assert (errored["step_id"], errored["worker"]) == ("s1", "rester")
    assert errored["plan_version"] == 1
    assert errored["status"] == "cancelled"
    assert failed["error_type"] == "RunCancelled"
    # What the ends say is what the closing event's step report says.
    (report,) = failed["steps"]
    assert report["status"] == "cancelled"
    assert [o["error_type"] for o in report["tool_outcomes"]] == ["cut"]


@pytest.mark.skipif(sys.platform == "win32", reason="SIGINT to a child needs POSIX")
@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_the_events_file_ends_the_cut_tool_call_and_its_step(tmp_path: Path, backend: str) -> None:
    path = tmp_path / "ev.jsonl"
    _, err = _interrupted(tmp_path, backend, "--events-file", str(path))
    assert "Traceback" not in err
    _check_ends(path.read_text(encoding="utf-8").splitlines())


@pytest.mark.skipif(sys.platform == "win32", reason="SIGINT to a child needs POSIX")
@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_the_events_on_stdout_end_the_cut_tool_call_and_its_step(
    tmp_path: Path, backend: str
) -> None:
    out, err = _interrupted(tmp_path, backend)
    assert "Traceback" not in err
    _check_ends(out.splitlines())
