"""A run a budget limit ended says which limit on its root span, and when each was
reached (decoded from real OTLP): a `partial` status alone did not say why."""

from __future__ import annotations

import contextlib
import json

import pytest

from regiment.errors import BudgetExceeded
from regiment.hierarchy import Budget, Planner, Team, Worker
from regiment.models import (
    ModelRequest,
    ModelResponse,
    ScriptedModel,
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


async def _root(budget: Budget) -> ReceivedSpan:
    with OtlpReceiver() as receiver:
        handle = configure_tracing("budget", endpoint=receiver.endpoint, set_global=False)
        model = ScriptedModel(_brain)
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
        return next(s for s in receiver.spans() if s.name == "invoke_agent t")


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
