"""A reply's other tool calls finish before a call that waits for approval pauses the run."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest

from regiment import Approve, Planner, ScriptedModel, Team, Worker, text_response
from regiment.models import ModelRequest, ModelResponse, ToolCallPart, ToolResultPart
from regiment.tools import tool

pytestmark = pytest.mark.anyio


def _team(log: list[str]) -> Team:
    @tool
    async def send_email(to: str) -> str:
        """Sends an e-mail (slowly)."""
        log.append(f"email to {to} started")
        await anyio.sleep(0.05)
        log.append(f"email to {to} sent")
        return "sent"

    @tool(requires_approval=True)
    def refund(order: str) -> str:
        """Refunds an order."""
        log.append(f"refund {order}")
        return "refunded"

    def brain(request: ModelRequest) -> ModelResponse | str:
        if request.role == "planner":
            return json.dumps({"steps": [{"description": "e-mail ann and refund order 7"}]})
        if request.role != "worker":
            return text_response("done")
        parts = [p for m in request.messages for p in m.parts if isinstance(p, ToolResultPart)]
        if parts:
            return text_response("; ".join(str(p.content) for p in parts))
        calls = (
            ToolCallPart(id="a", name="send_email", arguments={"to": "ann"}),
            ToolCallPart(id="b", name="refund", arguments={"order": "7"}),
        )
        return ModelResponse(parts=calls, stop_reason="tool_use", model="scripted")

    model = ScriptedModel(brain)
    clerk = Worker(
        name="clerk", description="E-mails, refunds.", model=model, tools=[send_email, refund]
    )
    return Team(name="shop", planner=Planner(model=model), workers=[clerk])


async def test_a_working_sibling_call_is_not_cancelled_by_a_pause(tmp_path: Path) -> None:
    log: list[str] = []
    async with _team(log).start(journal=tmp_path / "runs.db") as running:
        with anyio.fail_after(10):
            paused = await running.run("e-mail ann and refund order 7")
        assert paused.status == "paused"
        # The e-mail was under way when the refund asked: the run paused once it was sent.
        assert log == ["email to ann started", "email to ann sent"]
        (request,) = paused.pending_approvals
        await running.approve(request.request_id, Approve())
        with anyio.fail_after(10):
            done = await running.resume(paused.run_id)
    assert done.status == "completed"
    assert done.steps[0].output == "sent; refunded"
    assert log == ["email to ann started", "email to ann sent", "refund 7"]  # each body once


async def test_every_call_of_a_reply_that_asks_is_pending_when_the_run_pauses(
    tmp_path: Path,
) -> None:
    paid: list[str] = []

    @tool(requires_approval=True)
    def refund(order: str) -> str:
        """Refunds an order."""
        paid.append(order)
        return f"refunded {order}"

    def brain(request: ModelRequest) -> ModelResponse | str:
        if request.role == "planner":
            return json.dumps({"steps": [{"description": "refund orders 1 and 2"}]})
        if request.role != "worker":
            return text_response("done")
        parts = [p for m in request.messages for p in m.parts if isinstance(p, ToolResultPart)]
        if parts:
            return text_response("; ".join(str(p.content) for p in parts))
        calls = tuple(
            ToolCallPart(id=f"c{n}", name="refund", arguments={"order": n}) for n in ("1", "2")
        )
        return ModelResponse(parts=calls, stop_reason="tool_use", model="scripted")

    model = ScriptedModel(brain)
    clerk = Worker(name="clerk", description="Refunds.", model=model, tools=[refund])
    team = Team(name="shop", planner=Planner(model=model), workers=[clerk])
    async with team.start(journal=tmp_path / "runs.db") as running:
        with anyio.fail_after(10):
            paused = await running.run("refund orders 1 and 2")
        # Both asked at once: one pause lists both, so one round of decisions settles them.
        assert sorted(str(r.arguments["order"]) for r in paused.pending_approvals) == ["1", "2"]
        assert paused.answer == "paused: 2 approvals pending"
        for request in paused.pending_approvals:
            await running.approve(request.request_id, Approve())
        with anyio.fail_after(10):
            done = await running.resume(paused.run_id)
    assert done.status == "completed"
    assert done.steps[0].output == "refunded 1; refunded 2"
    assert sorted(paid) == ["1", "2"]


async def test_a_journal_that_hangs_while_a_request_is_recorded_holds_nothing_forever(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    # Recording a request is shielded from a pause's cancel, but only for a grace: a
    # journal whose look-up never answers must not hold the run, nor its pause, forever.
    import regiment.hierarchy._approvals as approvals
    from regiment.journal import JournaledApproval, SqliteJournal

    class ReadHangs(SqliteJournal):  # type: ignore[misc]  # (final: a test-only double)
        async def approval(self, run_id: str, approval_id: str) -> JournaledApproval | None:
            await anyio.sleep_forever()
            return None

    monkeypatch.setattr(approvals, "_RECORD_GRACE", 0.2)
    journal = await ReadHangs.open(tmp_path / "runs.db")
    log: list[str] = []
    try:
        async with _team(log).start(journal=journal) as running:
            with anyio.fail_after(10):
                paused = await running.run("e-mail ann and refund order 7")
    finally:
        await journal.close()
    assert paused.status == "paused"  # taken as a new request: pending, not lost
    (request,) = paused.pending_approvals
    assert request.tool_name == "refund"
    assert "refund 7" not in log
    assert "did not answer within 0.2 s whether approval request" in caplog.text
