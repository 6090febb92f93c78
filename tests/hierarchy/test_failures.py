"""A worker that raises, hangs, or runs out of iterations produces a report, not a hang."""

from __future__ import annotations

import anyio
import pytest
from opentelemetry.sdk.trace import TracerProvider

from regiment.errors import ModelAPIError, StepFailed
from regiment.hierarchy import Budget, Planner, StepErrored, Team, Worker
from regiment.models import (
    ModelRequest,
    ModelResponse,
    ScriptedModel,
    ToolResultPart,
    tool_call_response,
)
from regiment.telemetry import Telemetry
from regiment.tools import tool

from .brains import Brain, plan_json

pytestmark = pytest.mark.anyio


def _team(
    brain: Brain, *, replans: int = 0, step_timeout: float | None = 300.0, max_iterations: int = 8
) -> Team:
    model = ScriptedModel(brain)

    @tool
    def lookup(key: str) -> str:
        """Look a key up."""
        return f"value of {key}"

    worker = Worker(
        name="w",
        description="does things",
        model=model,
        tools=[lookup],
        step_timeout=step_timeout,
        max_iterations=max_iterations,
    )
    return Team(
        name="t", planner=Planner(model=model), workers=[worker], budget=Budget(replans=replans)
    )


async def test_worker_model_error_fails_the_step_and_the_run_names_it() -> None:
    async def work(description: str, results: list[ToolResultPart], request: ModelRequest) -> str:
        raise ModelAPIError(
            "overloaded", status_code=529, error_type="overloaded_error", request_id="req_1"
        )

    brain = Brain([plan_json({"description": "fragile"})], work=work)
    with pytest.raises(StepFailed) as info:
        await _team(brain).run("goal")
    assert info.value.step_id == "s1"
    assert info.value.worker == "w"
    assert "ModelAPIError" in info.value.cause
    assert "overloaded" in info.value.cause


async def test_failed_step_is_replanned_when_replans_remain() -> None:
    calls = 0

    async def work(description: str, results: list[ToolResultPart], request: ModelRequest) -> str:
        nonlocal calls
        calls += 1
        if description == "fragile":
            raise RuntimeError("disk on fire")
        return "fine"

    brain = Brain(
        [plan_json({"description": "fragile"}), plan_json({"description": "sturdy"})], work=work
    )
    result = await _team(brain, replans=1).run("goal")
    assert result.committed == ("s2",)
    errored = [e for e in result.events if isinstance(e, StepErrored)]
    assert [(e.step_id, e.status) for e in errored] == [("s1", "failed")]
    assert "disk on fire" in errored[0].error


async def test_hung_step_times_out() -> None:
    async def work(description: str, results: list[ToolResultPart], request: ModelRequest) -> str:
        await anyio.Event().wait()  # never answers
        return "unreachable"

    brain = Brain([plan_json({"description": "hang"})], work=work)
    with pytest.raises(StepFailed) as info:
        await _team(brain, step_timeout=0.05).run("goal")
    assert "timed_out" in info.value.cause


async def test_iteration_cap_is_a_reported_outcome() -> None:
    async def work(
        description: str, results: list[ToolResultPart], request: ModelRequest
    ) -> object:
        return tool_call_response("lookup", {"key": "again"})  # never gives a final answer

    brain = Brain([plan_json({"description": "loop"})], work=work)  # type: ignore[arg-type]
    with pytest.raises(StepFailed) as info:
        await _team(brain, max_iterations=3).run("goal")
    assert "iteration_limit" in info.value.cause
    assert len(brain.worker_requests) == 3


async def test_an_iteration_cap_after_failed_tool_calls_says_how_the_last_one_failed() -> None:
    # It said only "reached its cap ... without a final answer": why the loop went round
    # (bad arguments every time) was in INFO lines on regiment.worker, not in the error.
    async def work(
        description: str, results: list[ToolResultPart], request: ModelRequest
    ) -> object:
        return tool_call_response("lookup", {"key": 7})  # an int: never valid

    brain = Brain([plan_json({"description": "loop"})], work=work)  # type: ignore[arg-type]
    with pytest.raises(StepFailed) as info:
        await _team(brain, max_iterations=2).run("goal")
    assert (
        "reached its cap of 2 model calls without a final answer; its last tool call, lookup, "
        "failed: invalid arguments for tool 'lookup': key: Input should be a valid string"
    ) in info.value.cause


async def test_invented_tool_name_goes_back_to_the_model() -> None:
    async def work(
        description: str, results: list[ToolResultPart], request: ModelRequest
    ) -> object:
        if not results:
            return tool_call_response("send_email", {"to": "x"})
        return f"saw: {results[0].content}"

    brain = Brain([plan_json({"description": "mail"})], work=work)  # type: ignore[arg-type]
    result = await _team(brain).run("goal")
    output = result.output_of("s1")
    assert "send_email" in output
    assert "lookup" in output


async def test_a_bug_in_the_planner_handler_fails_the_run_with_its_cause() -> None:
    from collections.abc import Sequence

    from regiment.errors import RunError
    from regiment.hierarchy import Prompts

    class BrokenPrompts(Prompts):
        def synthesis_request(self, *, goal: str, committed: str, artifacts: Sequence[str]) -> str:
            raise ValueError("synthesis template is broken")

    brain = Brain([plan_json({"description": "x"})])
    model = ScriptedModel(brain)
    team = Team(
        name="t",
        planner=Planner(model=model, prompts=BrokenPrompts()),
        workers=[Worker(name="w", description="w", model=model)],
    )
    with pytest.raises(RunError) as info:
        await team.run("goal")
    assert "ValueError: synthesis template is broken" in str(info.value)
    assert isinstance(info.value.__cause__, ValueError)


class _NotAResponse:
    """A custom model whose complete() returns the reply's text, not a ModelResponse."""

    name = "homemade"
    provider = "local"

    async def complete(self, request: ModelRequest) -> ModelResponse:
        return "the answer"  # type: ignore[return-value]


@pytest.mark.parametrize("traced", [False, True])
async def test_a_model_that_returns_no_model_response_fails_the_step_saying_so(
    traced: bool,
) -> None:
    # Was "AttributeError: 'str' object has no attribute 'parts'" (or 'stop_reason').
    model = ScriptedModel(Brain([plan_json({"description": "x"})]))
    team = Team(
        name="t",
        planner=Planner(model=model),
        workers=[Worker(name="w", description="w", model=_NotAResponse())],
        budget=Budget(replans=0),
        telemetry=Telemetry(TracerProvider()) if traced else None,
    )
    with pytest.raises(StepFailed) as info:
        await team.run("goal")
    assert info.value.cause == (
        "step s1 (x) ended failed: ConfigError: model 'homemade' returned the str 'the answer' from complete(), not a "
        "ModelResponse; a Model's complete() must return regiment.models.ModelResponse "
        "(text_response(...) and tool_call_response(...) make one)"
    )


async def test_a_model_that_returns_no_model_response_fails_the_run_with_no_replan() -> None:
    # With replans left, the planner was asked three more times (on a real model, three
    # paid calls), each new plan's step failing the same way, before StepFailed.
    brain = Brain([plan_json({"description": "x"})] * 4)
    team = Team(
        name="t",
        planner=Planner(model=ScriptedModel(brain)),
        workers=[Worker(name="w", description="w", model=_NotAResponse())],
        budget=Budget(replans=3),
    )
    with pytest.raises(StepFailed) as info:
        await team.run("goal")
    assert info.value.fatal
    assert len(brain.plan_requests) == 1
    assert str(info.value).endswith(
        "(text_response(...) and tool_call_response(...) make one); the run ends without a "
        "replan: worker 'w' would fail the same way on any step"
    )
