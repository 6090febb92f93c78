"""Ctrl-C: the run is cancelled, nothing is left running, and the command says how far it got."""

from __future__ import annotations

import io
import json
import signal
import subprocess
import sys
from pathlib import Path

import anyio
import pytest
from anyio import wait_all_tasks_blocked

from regiment.cli import run_async

from .helpers import write_team

pytestmark = pytest.mark.anyio

# The runs here are not journaled: a journal works in a worker thread, and
# wait_all_tasks_blocked() would return while it does, before the step is dispatched.


def _read_until(child: subprocess.Popen[str], text: str, seen: list[str]) -> None:
    """Read the command's stderr lines into ``seen`` until one holds ``text``."""
    assert child.stderr is not None
    while not any(text in line for line in seen):
        line = child.stderr.readline()
        assert line, f"the command ended before saying {text!r}: {''.join(seen)}"
        seen.append(line)


async def test_interrupt_cancels_the_run_and_reports_progress(tmp_path: Path) -> None:
    team = write_team(tmp_path, "stuck")
    stop = anyio.Event()
    out, err = io.StringIO(), io.StringIO()
    codes: list[int] = []

    async def command() -> None:
        argv = ["run", str(team), "wait", "--app-dir", str(tmp_path), "--no-journal"]
        codes.append(await run_async(argv, stdout=out, stderr=err, environ={}, interrupt=stop))

    async with anyio.create_task_group() as tg:
        tg.start_soon(command)
        await wait_all_tasks_blocked()  # the step is dispatched and its model never answers
        assert "-> s1 to waiter" in err.getvalue()
        stop.set()
    # The task group only exits once the command returned: the run and the team have stopped.
    assert codes == [130]
    assert out.getvalue() == ""
    last = err.getvalue().splitlines()[-1]
    assert last.startswith("regiment: interrupted; cancelled the run after")
    assert "plan v1: 0 of 1 steps done; was running s1 (waiter)" in last


@pytest.mark.skipif(sys.platform == "win32", reason="SIGINT to a child needs POSIX")
@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_sigint_exits_130_without_a_traceback(tmp_path: Path, backend: str) -> None:
    team = write_team(tmp_path, "stuck")
    argv = [
        "run",
        str(team),
        "wait",
        "--app-dir",
        str(tmp_path),
        "--no-journal",
        "--backend",
        backend,
    ]
    with subprocess.Popen(
        [sys.executable, "-m", "regiment", *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).resolve().parents[2],
    ) as child:
        assert child.stderr is not None
        seen: list[str] = []
        _read_until(child, "-> s1", seen)  # the step is running
        child.send_signal(signal.SIGINT)
        rest = child.stderr.read()
        assert child.wait(timeout=30) == 130, rest
    assert "Traceback" not in rest
    assert "regiment: interrupted; cancelled the run after" in rest


async def test_interrupt_ends_the_events_file_with_a_cancelled_event(tmp_path: Path) -> None:
    team = write_team(tmp_path, "stuck")
    events_file = tmp_path / "events.jsonl"
    stop = anyio.Event()
    out, err = io.StringIO(), io.StringIO()
    codes: list[int] = []
    argv = ["run", str(team), "wait", "--app-dir", str(tmp_path), "--no-journal"]
    argv += ["--events", "jsonl", "--events-file", str(events_file)]

    async def command() -> None:
        codes.append(await run_async(argv, stdout=out, stderr=err, environ={}, interrupt=stop))

    async with anyio.create_task_group() as tg:
        tg.start_soon(command)
        await wait_all_tasks_blocked()
        # Written and flushed line by line: the dispatch is in the file while the run waits.
        assert '"type":"StepDispatched"' in events_file.read_text(encoding="utf-8")
        stop.set()
    assert codes == [130]
    lines = [json.loads(line) for line in events_file.read_text(encoding="utf-8").splitlines()]
    assert [e["type"] for e in lines] == [
        "RunStarted",
        "PlanCreated",
        "StepDispatched",
        "RunFailed",
    ]
    last = lines[-1]
    assert last["run_id"] == lines[0]["run_id"]
    assert last["error_type"] == "RunCancelled"
    assert "plan v1: 0 of 1 steps done; was running s1 (waiter)" in last["message"]
    # What the run got to, as a failed run's last line has it: its plan, and the
    # planner's call (the step's model call never answered).
    assert [plan["version"] for plan in last["plans"]] == [1]
    assert last["model_calls"] >= 1
    assert last["usage"]["input_tokens"] > 0


@pytest.mark.skipif(sys.platform == "win32", reason="SIGINT to a child needs POSIX")
@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_sigint_leaves_a_closing_event_in_the_events_file(tmp_path: Path, backend: str) -> None:
    team = write_team(tmp_path, "stuck")
    events_file = tmp_path / "events.jsonl"
    argv = [
        "run",
        str(team),
        "wait",
        "--app-dir",
        str(tmp_path),
        "--no-journal",
        "--backend",
        backend,
    ]
    argv += ["--events", "jsonl", "--events-file", str(events_file), "--plain"]
    with subprocess.Popen(
        [sys.executable, "-m", "regiment", *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).resolve().parents[2],
    ) as child:
        assert child.stderr is not None
        seen: list[str] = []
        _read_until(child, "-> s1", seen)
        child.send_signal(signal.SIGINT)
        rest = child.stderr.read()
        assert child.wait(timeout=30) == 130, rest
    assert "Traceback" not in rest
    lines = events_file.read_text(encoding="utf-8").splitlines()
    assert all(line.endswith("}") for line in lines)  # whole lines only
    last = json.loads(lines[-1])
    assert (last["type"], last["error_type"]) == ("RunFailed", "RunCancelled")
    assert last["message"].startswith("interrupted; cancelled the run after")


@pytest.mark.skipif(sys.platform == "win32", reason="SIGINT to a child needs POSIX")
def test_a_journaled_run_stopped_with_ctrl_c_is_journaled_cancelled(tmp_path: Path) -> None:
    # Ctrl-C cancels the run: the journal says "cancelled" (a choice, not a failure).
    team = write_team(tmp_path, "stuck")
    journal = str(tmp_path / "runs.db")
    argv = ["run", str(team), "wait", "--app-dir", str(tmp_path), "--journal", journal]
    root = Path(__file__).resolve().parents[2]
    with subprocess.Popen(
        [sys.executable, "-m", "regiment", *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=root,
    ) as child:
        assert child.stderr is not None
        while "-> s1" not in (line := child.stderr.readline()):
            assert line, "the command ended early"
        child.send_signal(signal.SIGINT)
        assert child.wait(timeout=30) == 130
    listed = subprocess.run(
        [sys.executable, "-m", "regiment", "runs", "--journal", journal, "--json"],
        capture_output=True,
        text=True,
        cwd=root,
        timeout=60,
        check=True,
    )
    (run,) = [json.loads(line) for line in listed.stdout.splitlines()]
    assert run["status"] == "cancelled"


_SLEEPY = '''
import json
import sys
import time

import anyio

from regiment.models import ModelRequest, ModelResponse, ToolCallPart, text_response
from regiment.tools import tool


@tool
def nap(minutes: int) -> str:
    """Sleeps in a plain (sync) body, which no cancel can stop."""
    print("napping", file=sys.stderr, flush=True)
    time.sleep(minutes * 60)
    return "rested"


@tool
async def doze(minutes: int) -> str:
    """Sleeps in an async body that swallows every cancel (the bug it stands for)."""
    print("napping", file=sys.stderr, flush=True)
    deadline = time.monotonic() + minutes * 60
    while time.monotonic() < deadline:
        try:
            await anyio.sleep(deadline - time.monotonic())
        except anyio.get_cancelled_exc_class():
            pass
    return "rested"


def brain(request: ModelRequest) -> ModelResponse:
    if request.role in ("planner", "replanner"):
        return text_response(json.dumps({"steps": [{"description": "take a nap"}]}))
    if request.role != "worker" or len(request.messages) > 1:
        return text_response("done")
    call = ToolCallPart(id="n1", name=request.tools[0].name, arguments={"minutes": 1})
    return ModelResponse(parts=(call,), stop_reason="tool_use", model="scripted")
'''


def _napping(tmp_path: Path, tool: str, *extra: str) -> subprocess.Popen[str]:
    """``regiment run`` (with ``extra`` options) of a team whose one step calls ``tool``
    of ``_SLEEPY``."""
    (tmp_path / "sleepy.py").write_text(_SLEEPY, encoding="utf-8")
    team = tmp_path / "team.toml"
    team.write_text(
        'name = "nappers"\nmodel = "scripted"\nbrain = "sleepy:brain"\n\n[[workers]]\n'
        f'name = "napper"\ndescription = "Naps."\ntools = ["sleepy:{tool}"]\n'
        "cancel_grace = 0.1\n",
        encoding="utf-8",
    )
    argv = ["run", str(team), "nap", "--app-dir", str(tmp_path), "--no-journal", "--plain"]
    argv += extra
    return subprocess.Popen(
        [sys.executable, "-m", "regiment", *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


# What the command says while it waits for each kind of tool that goes on after Ctrl-C.
_WAITING = {
    "nap": "regiment: waiting for 1 tool call(s) still running in a thread",
    "doze": "ignores cancellation and still runs",
}


@pytest.mark.skipif(sys.platform == "win32", reason="SIGINT to a child needs POSIX")
@pytest.mark.parametrize("tool", ["nap", "doze"], ids=["sync", "async-swallows-cancel"])
def test_sigint_with_a_tool_still_running_says_so_and_a_second_one_exits(
    tmp_path: Path, tool: str
) -> None:
    # Python waits for a thread running a sync tool body before it exits, and a team's
    # stop for an async tool that swallows its cancel: the command says why it has not
    # exited yet, and a second Ctrl-C leaves without waiting.
    with _napping(tmp_path, tool) as child:
        assert child.stderr is not None
        seen: list[str] = []
        _read_until(child, "napping", seen)  # the body is running
        child.send_signal(signal.SIGINT)
        _read_until(child, _WAITING[tool], seen)
        child.send_signal(signal.SIGINT)
        rest = child.stderr.read()
        assert child.wait(timeout=30) == 130  # not the minute the nap takes
    said = "".join(seen) + rest
    assert _WAITING[tool] in said
    assert "press Ctrl-C to exit without waiting" in said
    assert "Traceback" not in said
    assert "Exception ignored" not in said


@pytest.mark.skipif(sys.platform == "win32", reason="signals to a child need POSIX")
@pytest.mark.parametrize("second", [signal.SIGINT, signal.SIGTERM], ids=["sigint", "sigterm"])
def test_a_forced_exit_says_how_far_the_run_got(tmp_path: Path, second: signal.Signals) -> None:
    # The second signal cut the wind-down short with only "exiting without waiting":
    # no word of how far the run had got, the line an interrupted run ends with; and
    # the events file had no ending (its last line was the tool call's start).
    events = tmp_path / "events.jsonl"
    with _napping(tmp_path, "doze", "--events", "jsonl", "--events-file", str(events)) as child:
        assert child.stderr is not None
        seen: list[str] = []
        _read_until(child, "napping", seen)
        child.send_signal(signal.SIGINT)
        _read_until(child, _WAITING["doze"], seen)
        child.send_signal(second)
        rest = child.stderr.read()
        assert child.wait(timeout=30) == 130
    (last,) = [line for line in rest.splitlines() if line.startswith("regiment: ")]
    assert last.startswith("regiment: interrupted; cancelled the run after ")
    assert "plan v1: 0 of 1 steps done; was running s1 (napper)" in last
    assert "exiting without waiting for it to wind down" in last
    assert "Traceback" not in "".join(seen) + rest
    ending = json.loads(events.read_text(encoding="utf-8").splitlines()[-1])
    assert ending["type"] == "RunFailed"
    assert ending["error_type"] == "RunCancelled"
    assert ending["message"].startswith("interrupted; cancelled the run after ")
