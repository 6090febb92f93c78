"""Ctrl-C: the run is cancelled, nothing is left running, and the command says how far it got."""

from __future__ import annotations

import io
import json
import os
import select
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import anyio
import pytest
from anyio import wait_all_tasks_blocked

from regiment.cli import run_async

from .helpers import WAITING, read_until, write_napping_team, write_team

pytestmark = pytest.mark.anyio

# The runs here are not journaled: a journal works in a worker thread, and
# wait_all_tasks_blocked() would return while it does, before the step is dispatched.


async def _interrupted(argv: list[str], waiting: Callable[[str], None]) -> tuple[int, str, str]:
    """``regiment ARGV`` (a run that never ends), interrupted once all its tasks wait
    (``waiting`` checks its stderr there): its exit code, stdout and stderr. The task
    group only exits once the command returned: the run and the team have stopped."""
    stop = anyio.Event()
    out, err = io.StringIO(), io.StringIO()
    codes: list[int] = []

    async def command() -> None:
        codes.append(await run_async(argv, stdout=out, stderr=err, environ={}, interrupt=stop))

    async with anyio.create_task_group() as tg:
        tg.start_soon(command)
        await wait_all_tasks_blocked()
        waiting(err.getvalue())
        stop.set()
    (code,) = codes
    return code, out.getvalue(), err.getvalue()


async def test_interrupt_cancels_the_run_and_reports_progress(tmp_path: Path) -> None:
    team = write_team(tmp_path, "stuck")
    argv = ["run", str(team), "wait", "--app-dir", str(tmp_path), "--no-journal"]

    def waiting(err: str) -> None:  # the step is dispatched and its model never answers
        assert "-> s1 to waiter" in err

    code, out, err = await _interrupted(argv, waiting)
    assert code == 130
    assert out == ""
    last = err.splitlines()[-1]
    assert last.startswith("regiment: interrupted; cancelled the run after")
    assert "plan v1: 0 of 1 step done; was running s1 (waiter)" in last


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
        read_until(child, "-> s1", seen)  # the step is running
        child.send_signal(signal.SIGINT)
        rest = child.stderr.read()
        assert child.wait(timeout=30) == 130, rest
    assert "Traceback" not in rest
    assert "regiment: interrupted; cancelled the run after" in rest


async def test_interrupt_ends_the_events_file_with_a_cancelled_event(tmp_path: Path) -> None:
    team = write_team(tmp_path, "stuck")
    events_file = tmp_path / "events.jsonl"
    argv = ["run", str(team), "wait", "--app-dir", str(tmp_path), "--no-journal"]
    argv += ["--events", "jsonl", "--events-file", str(events_file)]

    def waiting(err: str) -> None:
        # Written and flushed line by line: the dispatch is in the file while the run waits.
        assert '"type":"StepDispatched"' in events_file.read_text(encoding="utf-8")

    code, _, _ = await _interrupted(argv, waiting)
    assert code == 130
    lines = [json.loads(line) for line in events_file.read_text(encoding="utf-8").splitlines()]
    assert [e["type"] for e in lines] == [
        "RunStarted",
        "PlanCreated",
        "StepDispatched",
        "StepErrored",  # the cut step's end, before the run's
        "RunFailed",
    ]
    assert (lines[3]["step_id"], lines[3]["status"]) == ("s1", "cancelled")
    last = lines[-1]
    assert last["run_id"] == lines[0]["run_id"]
    assert last["error_type"] == "RunCancelled"
    assert "plan v1: 0 of 1 step done; was running s1 (waiter)" in last["message"]
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
        read_until(child, "-> s1", seen)
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


def _napping(tmp_path: Path, tool: str, *extra: str) -> subprocess.Popen[str]:
    """``regiment run`` (with ``extra`` options) of a team whose one step calls ``tool``
    of ``SLEEPY``."""
    team = write_napping_team(tmp_path, tool)
    argv = ["run", str(team), "nap", "--app-dir", str(tmp_path), "--no-journal", "--plain"]
    argv += extra
    return subprocess.Popen(
        [sys.executable, "-m", "regiment", *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


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
        read_until(child, "napping", seen)  # the body is running
        child.send_signal(signal.SIGINT)
        read_until(child, WAITING[tool], seen)
        child.send_signal(signal.SIGINT)
        rest = child.stderr.read()
        assert child.wait(timeout=30) == 130  # not the minute the nap takes
    said = "".join(seen) + rest
    assert WAITING[tool] in said
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
        read_until(child, "napping", seen)
        child.send_signal(signal.SIGINT)
        read_until(child, WAITING["doze"], seen)
        child.send_signal(second)
        rest = child.stderr.read()
        assert child.wait(timeout=30) == 128 + second  # as the signal that forced it
    (last,) = [line for line in rest.splitlines() if line.startswith("regiment: ")]
    assert last.startswith("regiment: interrupted; cancelled the run after ")
    assert "plan v1: 0 of 1 step done; was running s1 (napper)" in last
    assert "exiting without waiting for it to wind down" in last
    assert "Traceback" not in "".join(seen) + rest
    ending = json.loads(events.read_text(encoding="utf-8").splitlines()[-1])
    assert ending["type"] == "RunFailed"
    assert ending["error_type"] == "RunCancelled"
    assert ending["message"].startswith("interrupted; cancelled the run after ")


# A tools module that takes its time to import (as one that imports a large library
# does); it says when it has begun. Ctrl-C is Python's own there, as in a shell, even
# under a parent that ignores it.
_SLOW_IMPORT = """
import signal, sys, time
signal.signal(signal.SIGINT, signal.default_int_handler)
print("importing", file=sys.stderr, flush=True)
time.sleep(60)
"""


@pytest.mark.skipif(sys.platform == "win32", reason="SIGINT to a child needs POSIX")
@pytest.mark.parametrize(
    "argv",
    [["validate"], ["run", "--backend", "asyncio"], ["run", "--backend", "trio"]],
    ids=["validate", "run-asyncio", "run-trio"],
)
def test_sigint_while_the_team_file_imports_exits_130_without_a_traceback(
    tmp_path: Path, argv: list[str]
) -> None:
    # It came before the command watched for signals: validate gave Python's
    # KeyboardInterrupt traceback, and run on trio an exception group's (exit 1).
    (tmp_path / "slow_tools.py").write_text(_SLOW_IMPORT, encoding="utf-8")
    team = tmp_path / "team.toml"
    team.write_text(
        'name = "slow"\nmodel = "scripted"\nbrain = "slow_tools:brain"\n\n[[workers]]\n'
        'name = "w"\ndescription = "Waits."\ntools = ["slow_tools:nap"]\n',
        encoding="utf-8",
    )
    command, *options = argv
    goal = ["go", "--no-journal"] if command == "run" else []
    with subprocess.Popen(
        [sys.executable, "-m", "regiment", command, str(team), *goal, *options],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
    ) as child:
        read_until(child, "importing", [])
        child.send_signal(signal.SIGINT)
        assert child.stderr is not None
        rest = child.stderr.read()
        assert child.wait(timeout=30) == 130, rest
    assert rest == "regiment: interrupted\n"


async def test_an_interrupt_before_the_first_plan_says_so(tmp_path: Path) -> None:
    # It said "plan v0: 0 of 0 steps done", of a plan there was not.
    team = write_team(tmp_path, "unplanned")
    argv = ["run", str(team), "wait", "--app-dir", str(tmp_path), "--no-journal"]

    def waiting(err: str) -> None:  # the planner's model call never answers
        assert "run started" in err

    code, _, err = await _interrupted(argv, waiting)
    assert code == 130
    last = err.splitlines()[-1]
    assert last.startswith("regiment: interrupted; cancelled the run after "), last
    assert last.endswith(" s, before its first plan"), last


@pytest.mark.skipif(sys.platform == "win32", reason="SIGINT to a child needs POSIX")
def test_sigint_while_the_team_starts_says_so(tmp_path: Path) -> None:
    # An MCP server that takes its time to come up: the team is still starting.
    (tmp_path / "slow_server.py").write_text(
        'import sys, time\nprint("starting", file=sys.stderr, flush=True)\ntime.sleep(60)\n',
        encoding="utf-8",
    )
    team = write_team(tmp_path, "stuck")
    command = json.dumps([sys.executable, str(tmp_path / "slow_server.py")])
    with team.open("a", encoding="utf-8") as file:
        file.write(f"\n[[workers.mcp]]\ncommand = {command}\n")
    argv = ["run", str(team), "wait", "--app-dir", str(tmp_path), "--no-journal"]
    with subprocess.Popen(
        [sys.executable, "-m", "regiment", *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as child:
        read_until(child, "starting", [])
        child.send_signal(signal.SIGINT)
        assert child.stderr is not None
        rest = child.stderr.read()
        assert child.wait(timeout=30) == 130, rest
    last = rest.splitlines()[-1]
    assert last.startswith("regiment: interrupted; cancelled the run after "), rest
    assert last.endswith(" s, before the team had started"), rest


def _read_terminal(leader: int, until: bytes | None = None) -> bytes:
    """What the command wrote to its terminal: until ``until`` appears, else until it
    closes it (EIO on Linux once no process holds the other side)."""
    seen = b""
    while until is None or until not in seen:
        ready, _, _ = select.select([leader], [], [], 30)
        assert ready, f"the command wrote nothing for 30 s: {seen[-500:]!r}"
        try:
            chunk = os.read(leader, 65536)
        except OSError:
            chunk = b""
        if not chunk:
            assert until is None, f"the command ended before writing {until!r}: {seen!r}"
            return seen
        seen += chunk
    return seen


@pytest.mark.skipif(sys.platform == "win32", reason="a pseudo-terminal needs POSIX")
def test_sigint_leaves_the_live_table_saying_the_run_was_interrupted(tmp_path: Path) -> None:
    # Its last frame still showed the step running, and the run working.
    team = write_team(tmp_path, "stuck")
    leader, follower = os.openpty()
    argv = ["run", str(team), "wait", "--app-dir", str(tmp_path), "--no-journal"]
    with subprocess.Popen(
        [sys.executable, "-m", "regiment", *argv],
        stdin=follower,
        stdout=follower,
        stderr=follower,
        env={**os.environ, "TERM": "xterm-256color", "COLUMNS": "120"},
    ) as child:
        os.close(follower)
        try:
            _read_terminal(leader, b"running")
            child.send_signal(signal.SIGINT)
            rest = _read_terminal(leader).decode()
        finally:
            os.close(leader)
        assert child.wait(timeout=30) == 130, rest
    last_frame, said = rest.rsplit("team waiters", 1)[1].split("regiment: interrupted; ")
    assert "plan v1" in last_frame, last_frame
    assert "interrupted" in last_frame, last_frame
    assert "cancelled" in last_frame, last_frame
    assert "running" not in last_frame, last_frame
    assert said.startswith("cancelled the run after"), said
