"""``regiment run --approve ask``: approvals are asked on a real pseudo-terminal."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import TextIO

import anyio
import pytest

from regiment.cli import run_async
from regiment.cli._ask import TerminalApprover, asking
from regiment.hierarchy import Planner, Team, TeamWorker, Worker
from regiment.journal import ToolCallFinished, open_journal
from regiment.models import ScriptedModel
from regiment.tools import ApprovalRequest, ToolResult, Toolset, tool

from .helpers import terminal

pytestmark = pytest.mark.anyio

REPO = Path(__file__).resolve().parents[2]
TEAM = str(REPO / "examples" / "refund" / "team_approval.toml")
GOAL = "For order 77120 check refund eligibility, issue the refund if eligible, then email the customer."
PROMPT = "approve? [y]es / [n]o / [e]dit JSON: "


async def _ask_run(typed: bytes, journal: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    argv = ["run", TEAM, GOAL, "--model", "scripted", "--approve", "ask", "--journal", journal]
    with terminal(typed) as stdin:
        assert stdin.isatty()
        code = await run_async(argv, stdout=out, stderr=err, environ={}, stdin=stdin)
    return code, out.getvalue(), err.getvalue()


async def _refunds(journal: str) -> list[ToolResult]:
    opened = await open_journal(journal)
    try:
        (run,) = await opened.list_runs()
        records = [e.record for e in await opened.read(run.run_id)]
    finally:
        await opened.close()
    return [
        r.result
        for r in records
        if isinstance(r, ToolCallFinished) and r.result.tool_name == "issue_refund"
    ]


async def test_yes_runs_the_refund_without_pausing(tmp_path: Path) -> None:
    journal = str(tmp_path / "runs.db")
    code, out, err = await _ask_run(b"maybe\ny\n", journal)
    assert code == 0, err
    assert "on the way" in out  # the e-mail after the refund
    assert 'approval needed (step s2): issue_refund({"order_id": "77120"})' in err
    assert "answer y (run it), n (do not run it) or e (run it with new JSON)" in err
    assert err.count(PROMPT) == 2
    assert "paused:" not in err
    (refund,) = await _refunds(journal)
    assert not refund.is_error
    assert refund.arguments == {"order_id": "77120"}


async def test_no_with_a_reason_tells_the_worker_and_runs_nothing(tmp_path: Path) -> None:
    journal = str(tmp_path / "runs.db")
    code, _, err = await _ask_run(b"n\nover the limit\n", journal)
    assert code == 0, err
    assert "reason: " in err
    (refund,) = await _refunds(journal)
    assert refund.is_error
    assert refund.content == "denied: over the limit"


async def test_edit_is_checked_until_it_fits_the_schema(tmp_path: Path) -> None:
    journal = str(tmp_path / "runs.db")
    typed = b'e [1]\ne {"order_id": 77120}\ne\n{"order_id": "77120"}\n'
    code, _, err = await _ask_run(typed, journal)
    assert code == 0, err
    assert "the arguments must be one JSON object" in err
    assert "those arguments do not validate:" in err
    assert "decide again" in err
    assert "arguments (JSON object): " in err
    (refund,) = await _refunds(journal)
    assert not refund.is_error
    assert refund.arguments == {"order_id": "77120"}


async def test_an_edit_nested_too_deep_is_asked_again(tmp_path: Path) -> None:
    # 1,500 levels: past msgspec's depth (a RecursionError ended the command), within a
    # terminal's line.
    journal = str(tmp_path / "runs.db")
    deep = b"e " + b"[" * 1500 + b"]" * 1500 + b"\n"
    code, _, err = await _ask_run(deep + b'e {"order_id": "77120"}\n', journal)
    assert code == 0, err
    assert "not JSON (maximum recursion depth exceeded" in err
    (refund,) = await _refunds(journal)
    assert refund.arguments == {"order_id": "77120"}


async def test_end_of_input_denies(tmp_path: Path) -> None:
    journal = str(tmp_path / "runs.db")
    code, _, err = await _ask_run(b"\x04", journal)  # Ctrl-D on an empty line
    assert code == 0, err
    (refund,) = await _refunds(journal)
    assert refund.content == "denied: no answer: the terminal's input ended"


async def test_without_a_terminal_ask_is_a_usage_error(tmp_path: Path) -> None:
    out, err = io.StringIO(), io.StringIO()
    argv = ["run", TEAM, GOAL, "--model", "scripted", "--approve", "ask"]
    code = await run_async(argv, stdout=out, stderr=err, environ={}, stdin=io.StringIO("y\n"))
    assert code == 2
    assert "--approve ask needs a terminal" in err.getvalue()
    assert "regiment approvals RUN_ID" in err.getvalue()
    assert "regiment approve RUN_ID REQUEST_ID" in err.getvalue()
    assert "--no-journal" not in err.getvalue()
    assert out.getvalue() == ""
    assert not (tmp_path / ".regiment").exists()  # refused before any journal is made


async def test_without_a_terminal_or_a_journal_it_says_to_keep_the_journal(
    tmp_path: Path,
) -> None:
    """The advice was to let the run pause and approve and resume it, which a run paused
    under --no-journal cannot do (its paused line says so): it says to drop --no-journal."""
    out, err = io.StringIO(), io.StringIO()
    argv = ["run", TEAM, GOAL, "--model", "scripted", "--approve", "ask", "--no-journal"]
    code = await run_async(argv, stdout=out, stderr=err, environ={}, stdin=io.StringIO("y\n"))
    assert (code, out.getvalue()) == (2, "")
    last = err.getvalue().splitlines()[-1]
    assert last.startswith(
        "regiment: error: --approve ask needs a terminal to ask on, and stdin is not one; "
        "without one, drop --no-journal and let the run pause (leave out --approve ask): a "
        "run paused without a journal cannot go on;"
    )


async def test_workers_of_nested_teams_are_asked_too() -> None:
    @tool(requires_approval=True)
    def issue_refund(order_id: str) -> str:
        """Refund an order."""
        paid.append(order_id)
        return f"refunded {order_id}"

    paid: list[str] = []
    model = ScriptedModel(["unused"])
    billing = Worker(name="billing", description="Refunds.", model=model, tools=[issue_refund])
    inner = Team(name="inner", planner=Planner(model=model), workers=[billing])
    sub = TeamWorker(name="sub", description="A billing desk.", team=inner)
    outer = Team(name="outer", planner=Planner(model=model), workers=[sub])
    err = io.StringIO()
    with terminal(b'e {"order_id": "9"}\n') as stdin:
        asked = asking(outer, TerminalApprover(stdin, err))
        (nested,) = asked.workers
        assert isinstance(nested, TeamWorker)
        (worker,) = nested.team.workers
        assert isinstance(worker, Worker)
        result = await worker.toolset.call("issue_refund", {"order_id": "1"}, call_id="c1")
    assert (result.content, result.is_error) == ("refunded 9", False)
    assert paid == ["9"]
    assert 'approval needed: issue_refund({"order_id": "1"})' in err.getvalue()
    assert billing.toolset.approver is None  # the team given is left as it was


async def test_a_cancelled_question_leaves_no_thread_that_holds_the_process() -> None:
    toolset = Toolset("billing", [])
    request = ApprovalRequest(tool_name="issue_refund", call_id="c1", arguments={"order_id": "1"})
    err = io.StringIO()
    # An earlier test's reader may not have quite ended yet (it sets its answer, then exits)
    earlier = set(threading.enumerate())
    with terminal(b"") as stdin:  # nothing typed: the question waits
        approver = TerminalApprover(stdin, err).for_tools(toolset)
        with anyio.CancelScope() as scope:
            async with anyio.create_task_group() as tg:
                tg.start_soon(approver, request)
                await anyio.wait_all_tasks_blocked()
                scope.cancel()
        assert scope.cancelled_caught
        (reader,) = [
            t
            for t in threading.enumerate()
            if t.name == "regiment-approve-ask" and t not in earlier
        ]
        assert reader.daemon  # blocked on the terminal, but the process can still exit
        assert PROMPT in err.getvalue()
    reader.join()  # the terminal closed: its read ended


class _Screen(io.StringIO):
    """A stderr that tells ``asked`` once the question's prompt is on it (the terminal
    approver writes it from its reader thread)."""

    def __init__(self) -> None:
        super().__init__()
        self.asked = threading.Event()

    def write(self, text: str, /) -> int:
        if PROMPT in text:
            self.asked.set()
        return super().write(text)


def _pty() -> tuple[int, TextIO]:
    """A pseudo-terminal: its leader's descriptor (what a person types into), and its
    follower as the command's stdin."""
    leader, follower = os.openpty()
    return leader, open(follower, encoding="utf-8")  # the caller closes it


async def test_a_calls_duration_leaves_out_the_persons_wait(tmp_path: Path) -> None:
    # ToolCallFinished.duration of the approved refund was the time the person took to
    # answer; it is the call's own time now, and the wait is its approval_wait.
    events, out, err = tmp_path / "events.jsonl", io.StringIO(), _Screen()
    argv = ["run", TEAM, GOAL, "--model", "scripted", "--approve", "ask", "--no-journal"]
    argv += ["--events", "jsonl", "--events-file", str(events)]
    leader, stdin = _pty()
    pause = 0.5  # how long the person takes, once asked

    async def person() -> None:
        await anyio.to_thread.run_sync(err.asked.wait)
        await anyio.sleep(pause)
        os.write(leader, b"y\n")

    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(person)
            code = await run_async(argv, stdout=out, stderr=err, environ={}, stdin=stdin)
    finally:
        os.close(leader)
        stdin.close()
    assert code == 0, err.getvalue()
    lines = [json.loads(x) for x in events.read_text(encoding="utf-8").splitlines()]
    finished = {e["tool"]: e for e in lines if e["type"] == "ToolCallFinished"}
    refund, check = finished["issue_refund"], finished["check_eligibility"]
    assert refund["outcome"] == "ok"
    assert refund["approval_wait"] >= pause  # the question was out before the pause began
    assert refund["duration"] < refund["approval_wait"]  # a trivial body, not the wait
    assert check["approval_wait"] == 0.0  # it needs no approval


def test_with_stdin_closed_ask_is_a_usage_error_not_a_traceback(tmp_path: Path) -> None:
    """``regiment run ... --approve ask <&-`` (a cron line, a service unit): Python has no
    ``sys.stdin`` then, and the check for a terminal raised AttributeError, a traceback."""
    argv = [sys.executable, "-m", "regiment", "run", TEAM, GOAL, "--model", "scripted"]
    done = subprocess.run(
        [*argv, "--approve", "ask", "--journal", str(tmp_path / "runs.db")],
        capture_output=True,
        text=True,
        cwd=Path(__file__).resolve().parents[2],
        timeout=120,
        check=False,
        preexec_fn=lambda: os.close(0),  # started with its stdin closed
    )
    assert (done.returncode, done.stdout) == (2, ""), done.stderr
    assert "Traceback" not in done.stderr
    assert done.stderr.splitlines()[-1].startswith(
        "regiment: error: --approve ask needs a terminal to ask on, and stdin is not one; "
        "without one, let the run pause (leave out --approve ask)"
    )
