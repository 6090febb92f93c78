"""``regiment resume --approve ask``: a paused run's pending call is asked on a real
pseudo-terminal, with the same prompts as ``run --approve ask``; the answer is journaled.
A decision taken meanwhile (``regiment approve``) is applied, not asked again."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from regiment.cli import run_async
from regiment.journal import ApprovalDecided, ToolCallFinished, open_journal

from .helpers import terminal
from .test_approve_ask import GOAL, PROMPT, TEAM

pytestmark = pytest.mark.anyio


async def _command(argv: list[str], typed: bytes | None = None) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    if typed is None:
        code = await run_async(argv, stdout=out, stderr=err, environ={}, stdin=io.StringIO())
    else:
        with terminal(typed) as stdin:
            code = await run_async(argv, stdout=out, stderr=err, environ={}, stdin=stdin)
    return code, out.getvalue(), err.getvalue()


async def _paused(journal: str) -> str:
    code, _out, err = await _command(
        ["run", TEAM, GOAL, "--model", "scripted", "--journal", journal]
    )
    assert code == 3, err
    (line,) = [x for x in err.splitlines() if x.startswith("paused:")]
    return line.rsplit(" ", 1)[1]


async def _journaled(
    journal: str, run_id: str
) -> tuple[str, list[ToolCallFinished], list[ApprovalDecided]]:
    opened = await open_journal(journal)
    try:
        status = (await opened.get_run(run_id)).status
        pending = await opened.pending_approvals(run_id)
        assert pending == ()
        records = [e.record for e in await opened.read(run_id)]
    finally:
        await opened.close()
    refunds = [
        r
        for r in records
        if isinstance(r, ToolCallFinished) and r.result.tool_name == "issue_refund"
    ]
    return status, refunds, [r for r in records if isinstance(r, ApprovalDecided)]


async def test_resume_asks_on_the_terminal_and_journals_the_answer(tmp_path: Path) -> None:
    journal = str(tmp_path / "runs.db")
    run_id = await _paused(journal)
    argv = ["resume", TEAM, run_id, "--model", "scripted", "--journal", journal, "--approve", "ask"]
    code, out, err = await _command(argv, b'e {"order_id": "77120"}\n')
    assert code == 0, err
    assert "on the way" in out  # the e-mail after the refund
    assert 'approval needed (step s2): issue_refund({"order_id": "77120"})' in err
    assert err.count(PROMPT) == 1
    status, refunds, decided = await _journaled(journal, run_id)
    assert status == "completed"
    (refund,) = refunds  # the body ran once, in the resume
    assert refund.result.arguments == {"order_id": "77120"}
    assert not refund.result.is_error
    (decision,) = decided  # the request the first process journaled is closed
    assert decision.decided_by == "approver"
    assert decision.decision.arguments == {"order_id": "77120"}  # type: ignore[union-attr]


async def test_a_decision_taken_while_paused_is_applied_not_asked(tmp_path: Path) -> None:
    journal = str(tmp_path / "runs.db")
    run_id = await _paused(journal)
    code, out, err = await _command(["approvals", run_id, "--json", "--journal", journal])
    assert code == 0, err
    (row,) = [json.loads(line) for line in out.splitlines()]
    request_id = row["request_id"]
    code, _, err = await _command(
        ["approve", run_id, request_id, "--deny", "not today", "--journal", journal]
    )
    assert code == 0, err
    argv = ["resume", TEAM, run_id, "--model", "scripted", "--journal", journal, "--approve", "ask"]
    code, out, err = await _command(argv, b"y\n")  # typed, but never read
    assert code == 0, err
    assert PROMPT not in err
    status, refunds, decided = await _journaled(journal, run_id)
    assert status == "completed"
    (refund,) = refunds
    assert refund.result.is_error
    assert refund.result.content == "denied: not today"
    assert [d.decided_by for d in decided] == [""]  # the CLI's decision, journaled once
