"""A guard that fails its step on one of several tool calls of one reply: the step
fails with that guard's ``GuardrailError``, as with a call alone, not with an
``ExceptionGroup`` that names none of it."""

from __future__ import annotations

import pytest

from regiment.hierarchy.guard import Outcome, Pass, ToolCallSubject, Trip
from regiment.models import ModelRequest, ModelResponse, ToolCallPart, ToolResultPart

from .brains import Brain, plan_json
from .test_guardrails_steps import Till, failed_step, make_team, run, trips

pytestmark = pytest.mark.anyio


async def lookup_and_refund(
    description: str, results: list[ToolResultPart], request: ModelRequest
) -> ModelResponse | str:
    if results:
        return "done"
    calls = (
        ToolCallPart(id="c1", name="lookup", arguments={"order_id": 7}),
        ToolCallPart(id="c2", name="issue_refund", arguments={"order_id": 7}),
    )
    return ModelResponse(parts=calls, stop_reason="tool_use", model="scripted")


def no_refunds(subject: ToolCallSubject) -> Outcome:
    return Trip("refunds need a human") if subject.tool == "issue_refund" else Pass()


async def test_a_trip_on_one_of_two_calls_fails_the_step_with_the_guards_error() -> None:
    brain = Brain([plan_json({"description": "refund order 7"})], work=lookup_and_refund)
    till = Till()
    outcome, seen = await run(make_team(till, brain, worker_guards=[no_refunds]))
    message = failed_step(outcome)
    assert (
        "ended failed: GuardrailError: guardrail 'no_refunds' tripped on the tool call: "
        "refunds need a human" in message
    )
    assert till.refunds == []
    (trip,) = trips(seen)
    assert trip.subject == "tool_call"
    (report,) = outcome.steps
    assert report.error_type == "regiment.errors.GuardrailError"
