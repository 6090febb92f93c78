"""What crosses to and from a Ray replica round-trips through msgspec bytes exactly:
the step with its replay and deps, every message a replica's step sends, and the
approval decisions the caller acks with. (No Ray here: the wire is plain bytes.)"""

from __future__ import annotations

import pickle

import pytest

from regiment.hierarchy import PlanStep, StepReport, TextDelta, ToolCallFinished, ToolCallStarted
from regiment.hierarchy._messages import AssignStep, StepAllowance, StepContext
from regiment.hierarchy.workers._wire import (
    ApprovalAsked,
    CallRecorded,
    LiveEvent,
    RemoteStep,
    StepDone,
    StepMessage,
    StepReplay,
    decode_decision,
    decode_messages,
    decode_step,
    encode,
    step_key,
)
from regiment.journal import ModelCallFinished
from regiment.journal import ToolCallFinished as ToolResultRecord
from regiment.journal import ToolCallStarted as ToolIntentRecord
from regiment.models import text_response, tool_call_response
from regiment.tools import (
    ApprovalDecision,
    ApprovalRequest,
    Approve,
    Deny,
    EditArguments,
    ToolResult,
)

ASSIGN = AssignStep(
    run_id="run-1",
    plan_version=2,
    step=PlanStep(id="s3", description="refund 88213", worker="billing", depends_on=("s1",)),
    context=StepContext(goal="refund", plan_outline="s3", dependency_outputs=(("s1", "ok"),)),
    attempt=2,
    allowance=StepAllowance(model_calls=3, tokens=900),
)
INTENT = ToolIntentRecord(
    run_id="run-1",
    plan_version=2,
    step_id="s3",
    call_index=0,
    tool="refund",
    call_id="c1",
    arguments={"order_id": "88213", "amount": 40, "lines": [1, 2.5, None, True]},
    idempotency_key="refund:order_id=88213",
)
RESULT = ToolResultRecord(
    run_id="run-1",
    plan_version=2,
    step_id="s3",
    call_index=0,
    result=ToolResult(call_id="c1", tool_name="refund", content={"refunded": 40}, duration_s=0.5),
)
MODEL = ModelCallFinished(
    run_id="run-1", call_key="step/2/s3/1", response=tool_call_response("refund", {"x": 1})
)


def test_a_step_round_trips_with_its_replay_and_deps() -> None:
    step = RemoteStep(
        assign=ASSIGN,
        headers={"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"},
        key=step_key(ASSIGN),
        replay=StepReplay(
            responses={"step/2/s3/1": text_response("done")}, intents=[INTENT], results=[RESULT]
        ),
        deps=pickle.dumps({"db": "postgres://x"}),
        live=True,
    )
    assert decode_step(encode(step)) == step
    assert step.key == "run-1/v2/s3/2"


MESSAGES: list[StepMessage] = [
    CallRecorded(record=MODEL),
    CallRecorded(record=INTENT, seq=1),
    CallRecorded(record=RESULT, seq=2),
    LiveEvent(event=TextDelta(run_id="run-1", role="worker", text="hé", worker="w", step_id="s3")),
    LiveEvent(
        event=ToolCallStarted(
            run_id="run-1", worker="w", step_id="s3", tool="refund", call_id="c1", arguments={}
        )
    ),
    LiveEvent(
        event=ToolCallFinished(
            run_id="run-1",
            worker="w",
            step_id="s3",
            tool="refund",
            call_id="c1",
            arguments={"a": 1},
            duration=0.25,
            outcome="ok",
        )
    ),
    ApprovalAsked(
        seq=3,
        call_index=0,
        request=ApprovalRequest(tool_name="refund", call_id="c1", arguments={"amount": 40}),
    ),
    StepDone(
        report=StepReport(
            run_id="run-1",
            plan_version=2,
            step_id="s3",
            attempt=2,
            worker="billing",
            status="done",
            output="refunded",
        )
    ),
]


def test_every_message_of_a_replicas_step_round_trips_in_one_item() -> None:
    assert decode_messages(encode(MESSAGES)) == MESSAGES


@pytest.mark.parametrize(
    "decision",
    [
        Approve(),
        Deny(reason="over the limit"),
        EditArguments(arguments={"amount": 10}, reason="cap"),
    ],
)
def test_an_approval_decision_round_trips(decision: ApprovalDecision) -> None:
    assert decode_decision(encode(decision)) == decision
