"""Budgets hold under fan-out, and running out is a clear, configurable outcome."""

from __future__ import annotations

import pytest

from regiment.errors import BudgetExceeded
from regiment.hierarchy import Budget, BudgetExhausted, Planner, Team, Worker
from regiment.models import (
    ModelRequest,
    ModelResponse,
    ScriptedModel,
    ToolResultPart,
    Usage,
    text_response,
    tool_call_response,
)
from regiment.tools import tool

from .brains import Brain, plan_json

pytestmark = pytest.mark.anyio


def _team(
    brain: Brain, budget: Budget, *, concurrency: int = 8, max_iterations: int = 4
) -> tuple[Team, ScriptedModel]:
    model = ScriptedModel(brain)

    @tool
    def probe(n: int) -> int:
        """Probe."""
        return n

    worker = Worker(
        name="w",
        description="does things",
        model=model,
        tools=[probe],
        max_iterations=max_iterations,
    )
    return Team(
        name="t",
        planner=Planner(model=model),
        workers=[worker],
        budget=budget,
        concurrency=concurrency,
    ), model


async def _two_calls(
    description: str, results: list[ToolResultPart], request: ModelRequest
) -> ModelResponse | str:
    if not results:
        return tool_call_response("probe", {"n": 1})
    return "done"


async def test_fan_out_never_overshoots_the_model_call_limit() -> None:
    brain = Brain([plan_json(*({"description": f"part {i}"} for i in range(6)))], work=_two_calls)
    team, model = _team(brain, Budget(model_calls=8))
    result = await team.run("six parts")
    assert model.calls <= 8
    assert result.model_calls == model.calls
    assert result.status == "partial"
    assert result.budget_exhausted == "model_calls"
    assert any(isinstance(e, BudgetExhausted) for e in result.events)


async def test_partial_result_keeps_what_was_committed() -> None:
    brain = Brain(
        [plan_json({"description": "first"}, {"description": "second", "depends_on": ["s1"]})],
        work=_two_calls,
    )
    team, model = _team(brain, Budget(model_calls=4))  # plan + 2 for s1 + 1 kept for synthesis
    result = await team.run("two steps")
    assert result.committed == ("s1",)
    assert result.status == "partial"
    assert model.calls <= 4


async def test_raise_mode_raises_budget_exceeded() -> None:
    brain = Brain(
        [plan_json({"description": "first"}, {"description": "second", "depends_on": ["s1"]})],
        work=_two_calls,
    )
    team, _model = _team(brain, Budget(model_calls=4, on_exhausted="raise"))
    with pytest.raises(BudgetExceeded) as info:
        await team.run("two steps")
    assert info.value.limit == "model_calls"
    # It said what ran out, not what to change.
    assert str(info.value).endswith(
        "(the team's limit is Budget(model_calls=4); raise it for runs that go further)"
    )


async def test_tool_call_allowance_is_split_across_parallel_steps() -> None:
    brain = Brain([plan_json(*({"description": f"part {i}"} for i in range(4)))], work=_two_calls)
    team, _ = _team(brain, Budget(tool_calls=2))
    result = await team.run("four parts")
    assert result.tool_calls <= 2


async def test_a_refused_tool_call_tells_the_model_to_answer_with_what_it_has() -> None:
    # It said only "not run: ... is used up": a model that asked again spent a model
    # call per ask, every one refused, up to the step's max_iterations.
    refusals: list[str] = []

    async def keeps_asking(
        description: str, results: list[ToolResultPart], request: ModelRequest
    ) -> ModelResponse | str:
        refusals.extend(str(r.content) for r in results if r.is_error)
        if refusals:
            return "done from the one result"
        return tool_call_response("probe", {"n": len(request.messages)})

    brain = Brain([plan_json({"description": "probe twice"})], work=keeps_asking)
    team, _ = _team(brain, Budget(tool_calls=1))
    result = await team.run("goal")
    assert result.tool_calls == 1
    assert refusals == [
        "not run: this step's tool call allowance of 1 is used up; answer from the results "
        "you have (a tool call now is refused too, unless the run frees some)"
    ]


async def test_wall_clock_budget_ends_a_hung_run_with_a_partial_result() -> None:
    import anyio

    async def hang(
        description: str, results: list[ToolResultPart], request: ModelRequest
    ) -> ModelResponse | str:
        await anyio.Event().wait()
        return "unreachable"

    brain = Brain([plan_json({"description": "hang"})], work=hang)
    team, _ = _team(brain, Budget(wall_clock=0.05))
    result = await team.run("goal")
    assert result.status == "partial"
    assert result.budget_exhausted == "wall_clock"


@pytest.mark.parametrize("limit", ["tokens", "input_tokens"])
async def test_input_read_from_the_prompt_cache_counts_against_token_budgets(limit: str) -> None:
    # Claude's input_tokens leave out what the cache served (and Chat Completions'
    # cached prompt tokens are read the same way); the ledger charged only the rest,
    # so Budget(tokens=3000) let a run whose every call read 2000 cached tokens go on.
    cached = Usage(input_tokens=10, cache_read_tokens=2000, output_tokens=7)

    def brain(request: ModelRequest) -> ModelResponse:
        if request.role == "planner":
            steps = ({"description": "a"}, {"description": "b", "depends_on": ["s1"]})
            return text_response(plan_json(*steps), usage=cached)
        return text_response("done", usage=cached)

    team, model = _team(brain, Budget(**{limit: 3000}))  # type: ignore[arg-type]
    result = await team.run("goal")
    assert (result.status, result.budget_exhausted) == ("partial", limit)
    assert model.calls == 2  # the plan and the first step: 4034 tokens, 4020 of them input
    assert result.usage.total_tokens == 2 * cached.total_tokens
