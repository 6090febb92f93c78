"""Records for the journal tests, one of each kind."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

from regiment.journal import (
    ApprovalDecided,
    ApprovalRequested,
    EventRecorded,
    ModelCallFinished,
    PlanVersion,
    Record,
    RunCreated,
    RunFinished,
    StepDispatched,
    StepReported,
    ToolCallFinished,
    ToolCallStarted,
)
from regiment.models import Usage, text_response
from regiment.tools import ApprovalRequest, Deny, ToolResult

EPOCH = datetime(2027, 1, 1, tzinfo=UTC)


def new_id() -> str:
    return f"run-{uuid.uuid4().hex[:10]}"


def created(
    run_id: str, *, minutes: int = 0, session: str | None = None, goal: str = "refund 88213"
) -> RunCreated:
    return RunCreated(
        run_id=run_id,
        team="support",
        config_hash="c0ffee",
        goal=goal,
        session=session,
        created_at=EPOCH + timedelta(minutes=minutes),
    )


def event(run_id: str, index: int) -> EventRecorded:
    return EventRecorded(run_id=run_id, kind="Tick", event={"index": index})


def intent(run_id: str, call_index: int = 0, *, step_id: str = "s1") -> ToolCallStarted:
    return ToolCallStarted(
        run_id=run_id,
        plan_version=1,
        step_id=step_id,
        call_index=call_index,
        tool="issue_refund",
        call_id=f"call-{call_index}",
        arguments={"order_id": "88213", "amount": 10.5},
        idempotency_key=f"issue_refund:order_id=88213#{call_index}",
    )


def result(run_id: str, call_index: int = 0, *, step_id: str = "s1") -> ToolCallFinished:
    return ToolCallFinished(
        run_id=run_id,
        plan_version=1,
        step_id=step_id,
        call_index=call_index,
        result=ToolResult(
            call_id=f"call-{call_index}",
            tool_name="issue_refund",
            content={"refund_id": "rf-1"},
            idempotency_key=f"issue_refund:order_id=88213#{call_index}",
            arguments={"order_id": "88213", "amount": 10.5},
        ),
    )


def reported(run_id: str, step_id: str, output: str, *, committed: bool = True) -> StepReported:
    return StepReported(
        run_id=run_id,
        plan_version=1,
        step_id=step_id,
        worker="billing",
        status="done" if committed else "failed",
        committed=committed,
        output=output,
        report={"step_id": step_id, "output": output},
    )


def approval(run_id: str, approval_id: str = "a1") -> ApprovalRequested:
    return ApprovalRequested(
        run_id=run_id,
        approval_id=approval_id,
        plan_version=1,
        step_id="s1",
        call_index=0,
        request=ApprovalRequest(tool_name="issue_refund", call_id="call-0", arguments={"x": 1}),
    )


def one_of_each(run_id: str) -> list[Record]:
    """Every kind of record after ``RunCreated``, as a run would write them."""
    return [
        PlanVersion(run_id=run_id, version=1, plan={"version": 1, "steps": [{"id": "s1"}]}),
        StepDispatched(run_id=run_id, plan_version=1, step_id="s1", worker="billing"),
        ModelCallFinished(
            run_id=run_id,
            call_key="step/1/s1/0",
            response=text_response("checking", usage=Usage(input_tokens=12, output_tokens=3)),
        ),
        intent(run_id),
        result(run_id),
        approval(run_id),
        ApprovalDecided(
            run_id=run_id, approval_id="a1", decision=Deny(reason="no"), decided_by="ops"
        ),
        event(run_id, 1),
        reported(run_id, "s1", "refunded"),
        RunFinished(run_id=run_id, status="completed", answer="done", result={"answer": "done"}),
    ]


class Clock:
    """A clock the test moves by hand, so lease expiry needs no waiting."""

    def __init__(self, now: float = 1_800_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds
