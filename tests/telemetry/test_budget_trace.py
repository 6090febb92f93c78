"""A run a budget limit ended says which limit on its root span, and when each was
reached (decoded from real OTLP): a `partial` status alone did not say why. A tool
call that is not run (its step's share used up, its reply cut off) has its own span."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable

import pytest

from regiment.errors import BudgetExceeded
from regiment.hierarchy import Budget, Planner, Team, Worker
from regiment.models import (
    ModelRequest,
    ModelResponse,
    ScriptedModel,
    ToolCallPart,
    ToolResultPart,
    text_response,
    tool_call_response,
)
from regiment.telemetry import Telemetry, configure_tracing
from regiment.tools import tool

from .otlp_receiver import OtlpReceiver, ReceivedSpan

pytestmark = pytest.mark.anyio


@tool
def lookup(key: str) -> str:
    """Look a key up."""
    return key


def _brain(request: ModelRequest) -> ModelResponse:
    if request.role == "planner":
        steps = [
            {"id": "s1", "description": "a"},
            {"id": "s2", "description": "b"},
            {"id": "s3", "description": "c", "depends_on": ["s1", "s2"]},
        ]
        return text_response(json.dumps({"steps": steps}))
    if request.role == "worker":
        if any(isinstance(p, ToolResultPart) for p in request.messages[-1].parts):
            return text_response("done")
        return tool_call_response("lookup", {"key": "k"})
    return text_response("answer")


async def _spans(
    budget: Budget, brain: Callable[[ModelRequest], ModelResponse] = _brain
) -> tuple[ReceivedSpan, ...]:
    with OtlpReceiver() as receiver:
        handle = configure_tracing("budget", endpoint=receiver.endpoint, set_global=False)
        model = ScriptedModel(brain)
        team = Team(
            name="t",
            planner=Planner(model=model),
            workers=[Worker(name="w", description="w", model=model, tools=[lookup])],
            budget=budget,
            telemetry=Telemetry(handle.provider),
        )
        with contextlib.suppress(BudgetExceeded):
            await team.run("go")
        handle.shutdown()
        return receiver.spans()


async def _root(budget: Budget) -> ReceivedSpan:
    return next(s for s in await _spans(budget) if s.name == "invoke_agent t")


def _not_run(span: ReceivedSpan, why: str) -> bool:
    """Whether ``span`` says its call did not run, and ``why`` (``error.type``)."""
    return (
        span.attributes["error.type"] == why
        and span.attributes["regiment.tool.outcome"] == why
        and span.status_code == 2
        and span.attributes["gen_ai.tool.name"] == "lookup"
    )


def _reached(root: ReceivedSpan) -> list[tuple[object, object]]:
    return [
        (attributes["regiment.budget.limit"], attributes.get("regiment.step.id"))
        for name, attributes in root.events
        if name == "regiment.budget.exhausted"
    ]


async def test_a_run_out_of_model_calls_says_so_on_its_root() -> None:
    root = await _root(Budget(model_calls=3))
    assert root.attributes["regiment.run.status"] == "partial"
    assert root.attributes["regiment.budget.exhausted"] == "model_calls"
    assert _reached(root) == [("model_calls", None)]


async def test_a_run_that_raised_for_its_budget_names_the_limit_too() -> None:
    root = await _root(Budget(model_calls=3, on_exhausted="raise"))
    assert root.status_code == 2
    assert root.attributes["error.type"] == "regiment.errors.BudgetExceeded"
    assert root.attributes["regiment.budget.exhausted"] == "model_calls"


async def test_a_steps_refused_tool_call_is_an_event_naming_the_step() -> None:
    # One tool call for three steps: s1 and s2 share it, one of them is refused
    # its call; the run ends partial once its own tool calls are spent.
    root = await _root(Budget(tool_calls=1))
    assert root.attributes["regiment.budget.exhausted"] == "tool_calls"
    *shares, run = _reached(root)
    assert [limit for limit, _ in shares] == ["tool_calls"]  # the step refused its call
    assert shares[0][1] in ("s1", "s2")
    assert run == ("tool_calls", None)  # then the run's own were spent


async def test_a_run_within_its_budget_has_neither() -> None:
    root = await _root(Budget())
    assert "regiment.budget.exhausted" not in root.attributes
    assert _reached(root) == []


async def test_a_tool_call_refused_by_its_steps_share_has_a_span_saying_so() -> None:
    # Three calls in one reply, one allowed: the other two did not run, and the trace
    # said nothing of them (only the root's budget event counted them).
    def brain(request: ModelRequest) -> ModelResponse:
        if request.role == "planner":
            return text_response(json.dumps({"steps": [{"id": "s1", "description": "a"}]}))
        if request.role == "worker" and len(request.messages) == 1:
            calls = [
                ToolCallPart(id=f"c{i}", name="lookup", arguments={"key": "k"}) for i in (1, 2, 3)
            ]
            return ModelResponse(parts=tuple(calls), stop_reason="tool_use", model="m")
        return text_response("done")

    spans = await _spans(Budget(tool_calls=1), brain)
    calls = {
        str(s.attributes["gen_ai.tool.call.id"]): s
        for s in spans
        if s.name == "execute_tool lookup"
    }
    assert sorted(calls) == ["c1", "c2", "c3"]
    assert calls["c1"].attributes["regiment.tool.outcome"] == "ok"  # the one that ran
    assert all(_not_run(calls[c], "budget_exhausted") for c in ("c2", "c3"))
    step = next(s for s in spans if s.name == "invoke_agent w")
    assert {calls[c].parent_span_id for c in calls} == {step.span_id}


async def test_a_tool_call_in_a_cut_off_reply_has_a_span_saying_so() -> None:
    def brain(request: ModelRequest) -> ModelResponse:
        if request.role == "planner":
            return text_response(json.dumps({"steps": [{"id": "s1", "description": "a"}]}))
        if request.role == "worker" and len(request.messages) == 1:
            call = ToolCallPart(id="c1", name="lookup", arguments={"key": "k"})
            return ModelResponse(parts=(call,), stop_reason="max_tokens", model="m")
        return text_response("done")

    spans = await _spans(Budget(), brain)
    (call,) = [s for s in spans if s.name == "execute_tool lookup"]
    assert _not_run(call, "cut_off")
    root = next(s for s in spans if s.name == "invoke_agent t")
    assert root.attributes["regiment.usage.tool_calls"] == 0  # it did not run
