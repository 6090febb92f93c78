"""Teams as workers: budgets flow down, child failures become step reports, config rules."""

from __future__ import annotations

import pytest

from regiment.errors import ConfigError, StepFailed
from regiment.hierarchy import Budget, Planner, StepAllowance, Team, Worker
from regiment.hierarchy.workers._team_worker import DEFAULT_TEAM_STEP_MODEL_CALLS, TeamWorker
from regiment.models import (
    ModelRequest,
    ModelResponse,
    ScriptedModel,
    ToolResultPart,
    estimate_tokens,
    text_response,
    tool_call_response,
)
from regiment.tools import tool

from .brains import Brain, plan_json

pytestmark = pytest.mark.anyio


@tool
def probe(n: int) -> int:
    """Probe."""
    return n


async def _two_calls(
    description: str, results: list[ToolResultPart], request: ModelRequest
) -> ModelResponse | str:
    if not results:
        return tool_call_response("probe", {"n": 1})
    return f"found {description}"


def _child(brain: Brain, budget: Budget) -> tuple[Team, ScriptedModel]:
    model = ScriptedModel(brain)
    worker = Worker(name="digger", description="digs", model=model, tools=[probe])
    return Team(name="child", planner=Planner(model=model), workers=[worker], budget=budget), model


async def test_allowance_caps_a_runs_budget() -> None:
    brain = Brain([plan_json(*({"description": f"part {i}"} for i in range(3)))], work=_two_calls)
    team, model = _child(brain, Budget(model_calls=100))
    async with team.start() as running:
        result = await running.run("three parts", allowance=StepAllowance(model_calls=4))
    assert model.calls <= 4
    assert result.model_calls == model.calls
    assert result.status == "partial"
    assert result.budget_exhausted == "model_calls"


async def test_an_input_or_output_token_allowance_caps_a_runs_budget() -> None:
    # Unlimited, the run takes about 2,800 input and 90 output tokens.
    for allowance, limit in (
        (StepAllowance(input_tokens=1_200), "input_tokens"),
        (StepAllowance(output_tokens=50), "output_tokens"),
    ):
        brain = Brain(
            [plan_json(*({"description": f"part {i}"} for i in range(3)))], work=_two_calls
        )
        team, _ = _child(brain, Budget())
        async with team.start() as running:
            result = await running.run("three parts", allowance=allowance)
        assert result.status == "partial"
        assert result.budget_exhausted == limit
        if allowance.input_tokens is not None:
            assert result.usage.input_tokens <= allowance.input_tokens


async def test_parent_allowance_caps_the_child_run() -> None:
    # The child would need 1 (plan) + 3 * 2 (steps) + 1 (synthesis) = 8 calls and its own
    # budget allows 100, but the parent has 6: 1 for its plan, 1 kept for its synthesis,
    # so the step's allowance is 4.
    child_brain = Brain(
        [plan_json(*({"description": f"part {i}"} for i in range(3)))], work=_two_calls
    )
    child, child_model = _child(child_brain, Budget(model_calls=100))
    parent_brain = Brain([plan_json({"description": "investigate", "worker": "research"})])
    parent_model = ScriptedModel(parent_brain)
    team = Team(
        name="parent",
        planner=Planner(model=parent_model),
        workers=[TeamWorker(name="research", description="finds things", team=child)],
        budget=Budget(model_calls=6),
    )
    result = await team.run("goal")

    assert 1 <= child_model.calls <= 4
    (report,) = result.steps
    assert report.status == "budget_exhausted"
    assert report.error is not None
    assert "ran out of budget (model_calls)" in report.error
    assert report.model_calls == child_model.calls
    # What the child committed comes back at fact level, tool results included.
    assert report.tool_result("probe") == 1
    assert report.output.startswith("Partial result")
    assert result.status == "partial"
    assert result.budget_exhausted == "model_calls"
    assert result.model_calls == parent_model.calls + child_model.calls <= 6


async def test_child_plan_error_fails_the_parent_step_with_its_text() -> None:
    child_brain = Brain([plan_json({"description": "x", "worker": "nobody"})])
    child_model = ScriptedModel(child_brain)
    child = Team(
        name="child",
        planner=Planner(model=child_model, max_plan_attempts=1),
        workers=[Worker(name="digger", description="digs", model=child_model)],
    )
    parent_model = ScriptedModel(Brain([plan_json({"description": "delegate"})]))
    team = Team(
        name="parent",
        planner=Planner(model=parent_model),
        workers=[TeamWorker(name="research", description="finds things", team=child)],
        budget=Budget(replans=0),
    )
    with pytest.raises(StepFailed) as info:
        await team.run("goal")
    assert info.value.worker == "research"
    assert "ended failed" in info.value.cause
    assert "team 'child': PlanError" in info.value.cause
    assert "nobody" in info.value.cause


def test_team_worker_describes_its_team() -> None:
    model = ScriptedModel(["unused"])
    child = Team(
        name="child",
        planner=Planner(model=model),
        workers=[
            Worker(name="a", description="a", model=model),
            Worker(name="b", description="b", model=model),
        ],
    )
    unlimited = TeamWorker(name="sub", description="d", team=child)
    assert unlimited.capabilities == ("a", "b")
    assert unlimited.step_model_calls == DEFAULT_TEAM_STEP_MODEL_CALLS
    limited = Team(
        name="child",
        planner=Planner(model=model),
        workers=child.workers,
        budget=Budget(model_calls=12),
    )
    assert TeamWorker(name="sub", description="d", team=limited).step_model_calls == 12
    with pytest.raises(
        ConfigError, match="Worker: name must be non-empty letters, digits, '_' or '-'; got 'a b'"
    ):
        TeamWorker(name="a b", description="d", team=child)


async def test_a_team_that_contains_itself_is_refused_at_start() -> None:
    model = ScriptedModel(["unused"])
    workers: list[Worker | TeamWorker] = [Worker(name="w", description="w", model=model)]
    team = Team(name="loop", planner=Planner(model=model), workers=workers)
    workers.append(TeamWorker(name="again", description="itself", team=team))
    with pytest.raises(ConfigError, match=r"team 'loop' contains itself \(loop -> loop\)"):
        async with team.start():
            pass


async def test_a_nested_teams_tokens_go_over_by_the_replies_of_its_own_steps_in_flight() -> None:
    # The README's bound for tokens counts a team worker's step as its child run: one
    # reply per child step in flight, plus the child planner's, not one reply per step.
    long = "done " * 80

    async def work(description: str, results: list[ToolResultPart], request: ModelRequest) -> str:
        return long

    parts = plan_json(*({"description": f"part {i}"} for i in range(5)))
    child_model = ScriptedModel(Brain([parts], work=work))
    digger = Worker(name="digger", description="digs", model=child_model)
    child = Team(name="child", planner=Planner(model=child_model), workers=[digger])
    parent_plan = plan_json({"description": "investigate", "worker": "research"})
    team = Team(
        name="parent",
        planner=Planner(model=ScriptedModel(Brain([parent_plan]))),
        workers=[TeamWorker(name="research", description="finds things", team=child)],
        budget=Budget(output_tokens=120),  # the two plans take about 60
    )
    result = await team.run("goal")
    reply = estimate_tokens(text_response(long))
    plans = estimate_tokens(text_response(parts)) + estimate_tokens(text_response(parent_plan))
    assert result.status == "partial"
    assert result.budget_exhausted == "output_tokens"
    assert 120 + reply + plans < result.usage.output_tokens <= 120 + 5 * reply + plans
