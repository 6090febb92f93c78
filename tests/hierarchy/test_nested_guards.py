"""A team's guards on calls (model requests and replies, tool calls and results)
guard the calls of the teams nested in it too; its plan and answer guards do not
judge a nested team's plans and answers."""

from __future__ import annotations

import pytest

from regiment.errors import StepFailed
from regiment.hierarchy import (
    AnswerSubject,
    Budget,
    Pass,
    Planner,
    PlanSubject,
    Team,
    TeamWorker,
    ToolCallSubject,
    Trip,
    Worker,
)
from regiment.hierarchy.guard import GuardLike, redact_pii
from regiment.models import ModelRequest, ModelResponse, ScriptedModel, tool_call_response
from regiment.tools import Tool, tool

from .brains import plan_json, tool_results

pytestmark = pytest.mark.anyio

GOAL = "Find the order of ann@example.com"


def _child(brain_model: ScriptedModel, tools: list[Tool[..., object]]) -> Team:
    return Team(
        name="research",
        planner=Planner(model=brain_model),
        workers=[Worker(name="reader", description="Reads.", model=brain_model, tools=tools)],
    )


def _parent(child: Team, model: ScriptedModel, guards: list[GuardLike]) -> Team:
    return Team(
        name="office",
        planner=Planner(model=model),
        workers=[TeamWorker(name="research", description="A research team.", team=child)],
        guardrails=guards,
        budget=Budget(replans=0),
    )


def _brain(request: ModelRequest) -> ModelResponse | str:
    if request.role == "planner":
        worker = "research" if "office" in request.system else "reader"
        return plan_json({"description": "look up the order", "worker": worker})
    if request.role == "worker" and not tool_results(request):
        return tool_call_response("lookup", {"who": "ann@example.com"})
    return "order 7"


async def test_an_enclosing_teams_request_guard_redacts_a_nested_teams_model_calls() -> None:
    inner = ScriptedModel(_brain)

    @tool
    def lookup(who: str) -> str:
        """Find someone's order."""
        return "order 7"

    parent = _parent(_child(inner, [lookup]), ScriptedModel(_brain), [redact_pii()])
    result = await parent.run(GOAL)
    assert result.status == "completed"
    assert inner.requests  # the nested team's planner and worker were asked
    for request in inner.requests:
        text = request.system + "".join(m.text for m in request.messages)
        assert "ann@example.com" not in text


async def test_an_enclosing_teams_tool_call_guard_guards_a_nested_teams_tools() -> None:
    ran: list[str] = []

    @tool
    def lookup(who: str) -> str:
        """Find someone's order."""
        ran.append(who)
        return "order 7"

    def no_lookups(call: ToolCallSubject) -> Trip:
        return Trip("no lookups today")

    parent = _parent(_child(ScriptedModel(_brain), [lookup]), ScriptedModel(_brain), [no_lookups])
    with pytest.raises(StepFailed, match="no lookups today"):
        await parent.run(GOAL)
    assert ran == []


async def test_an_enclosing_teams_plan_and_answer_guards_judge_only_its_own() -> None:
    judged: list[str] = []

    def plans(plan: PlanSubject) -> Pass:
        judged.append(f"plan: {plan.steps[0].worker}")
        return Pass()

    def answers(answer: AnswerSubject) -> Pass:
        judged.append("answer")
        return Pass()

    @tool
    def lookup(who: str) -> str:
        """Find someone's order."""
        return "order 7"

    parent = _parent(
        _child(ScriptedModel(_brain), [lookup]), ScriptedModel(_brain), [plans, answers]
    )
    result = await parent.run(GOAL)
    assert result.status == "completed"
    assert judged == ["plan: research", "answer"]
