"""What the README says a trip costs and ends: a tool call a guard refuses counts
against the tool-call budget, as one the model asked for; a planner-side reply a
``tell_model`` guard trips on ends the run (no step to tell)."""

from __future__ import annotations

import pytest

from regiment.errors import GuardrailError
from regiment.hierarchy import Budget, Planner, RunResult, Team, Worker
from regiment.hierarchy.guard import Guardrail, Outcome, ReplySubject, Trip, guardrail
from regiment.models import ScriptedModel

from .brains import Brain, plan_json
from .test_guardrails_steps import Till, brain, no_refunds, run

pytestmark = pytest.mark.anyio


async def test_a_refused_call_counts_against_the_tool_call_budget() -> None:
    till = Till()
    model = ScriptedModel(brain())
    worker = Worker(
        name="billing",
        description="refunds",
        model=model,
        tools=till.tools(),  # type: ignore[arg-type]
        guardrails=[Guardrail(no_refunds, "tool_call", on_trip="tell_model")],
    )
    team = Team(
        name="t", planner=Planner(model=model), workers=[worker], budget=Budget(tool_calls=1)
    )
    outcome, _ = await run(team)
    assert isinstance(outcome, RunResult)
    assert till.refunds == []
    assert outcome.tool_calls == 1
    (step,) = outcome.steps
    assert [o.error_type for o in step.tool_outcomes] == ["guardrail"]


async def test_a_planner_reply_a_tell_model_guard_trips_on_ends_the_run() -> None:
    @guardrail("model_reply", on_trip="tell_model")
    def never(subject: ReplySubject) -> Outcome:
        return Trip("no plans today")

    model = ScriptedModel(Brain([plan_json({"description": "refund order 7"})]))
    worker = Worker(name="billing", description="refunds", model=model)
    team = Team(name="t", planner=Planner(model=model, guardrails=[never]), workers=[worker])
    async with team.start() as running:
        with pytest.raises(GuardrailError, match="'never' tripped on the model reply"):
            await running.run("refund order 7")
