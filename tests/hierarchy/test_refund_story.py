"""The refund story: a failed eligibility check replans the tail; the refund never runs."""

from __future__ import annotations

import json

import pytest

from examples.refund.brain import refund_brain
from examples.refund.team import GOAL, build_team
from examples.refund.tools import Ledger
from regiment.hierarchy import (
    CheckFailed,
    GuardrailTripped,
    PlanCreated,
    Replanned,
    RunCompleted,
    StepCompleted,
    SynthesisStarted,
    TextDelta,
    ToolCallFinished,
    ToolCallStarted,
)
from regiment.models import ModelRequest, ModelResponse, ScriptedModel

pytestmark = pytest.mark.anyio


async def test_ineligible_order_replans_and_never_refunds() -> None:
    ledger = Ledger()
    result = await build_team(ScriptedModel(refund_brain), ledger).run(GOAL)

    assert result.status == "completed"
    assert [p.version for p in result.plans] == [1, 2]
    v1, v2 = result.plans
    assert [s.id for s in v1.steps] == ["s1", "s2", "s3"]
    assert v2.parent_version == 1
    assert "not eligible" in v2.reason
    assert "40 days" in v2.reason
    # The rejected check step stays as evidence (not committed); the tail is new.
    assert [s.id for s in v2.steps] == ["s1", "s4", "s5"]
    assert result.committed == ("s4", "s5")
    assert result.rejected == ("s1",)
    assert ledger.refunds == []  # issue_refund never ran
    assert ledger.exceptions == ["88213"]
    assert len(ledger.emails) == 1
    assert "could not be made" in ledger.emails[0]["body"]
    assert "on the way" not in ledger.emails[0]["body"]
    kinds = [type(e).__name__ for e in result.events]
    assert kinds.index("CheckFailed") < kinds.index("Replanned") < kinds.index("SynthesisStarted")
    assert isinstance(result.events[-1], SynthesisStarted)  # RunCompleted carries the result itself
    replanned = next(e for e in result.events if isinstance(e, Replanned))
    assert [s.id for s in replanned.removed] == ["s2", "s3"]
    assert [s.id for s in replanned.added] == ["s4", "s5"]
    assert any(isinstance(e, CheckFailed) and e.step_id == "s1" for e in result.events)
    assert sum(isinstance(e, PlanCreated) for e in result.events) == 2


async def test_eligible_order_runs_the_plan_as_written() -> None:
    ledger = Ledger()
    goal = GOAL.replace("88213", "77120")
    result = await build_team(ScriptedModel(refund_brain), ledger).run(goal)

    assert [p.version for p in result.plans] == [1]
    assert result.committed == ("s1", "s2", "s3")
    assert ledger.refunds == ["77120"]
    assert "on the way" in ledger.emails[0]["body"]
    completed = [e.step_id for e in result.events if isinstance(e, StepCompleted)]
    assert completed == ["s1", "s2", "s3"]
    assert result.usage_by_role.keys() >= {"planner", "synthesizer", "billing", "comms"}
    assert (
        result.model_calls == 1 + 2 * 3 + 1
    )  # plan, each step calls a tool then answers, synthesis
    assert result.tool_calls == 3


async def test_stream_and_result_tell_the_same_story() -> None:
    ledger = Ledger()
    team = build_team(ScriptedModel(refund_brain), ledger)
    async with team.start() as running, running.stream(GOAL) as events:
        seen = [event async for event in events]
    final = seen[-1]
    assert isinstance(final, RunCompleted)
    # Live events (text deltas, tool calls as they go) are the stream's alone.
    live = (TextDelta, ToolCallStarted, ToolCallFinished)
    assert any(isinstance(e, live) for e in seen)
    assert tuple(e for e in seen[:-1] if not isinstance(e, live)) == final.result.events


async def test_a_plan_that_refunds_before_checking_eligibility_is_re_prompted() -> None:
    """The refund team's plan guard: the first plan refunds straight away, goes back
    to the planner with the policy's reason, and the second plan is the usual one."""
    told: list[str] = []

    def hasty(request: ModelRequest) -> ModelResponse | str:
        if request.role == "planner" and not told:
            told.append("")
            order = "88213"
            return json.dumps(
                {
                    "steps": [
                        {"description": f"Issue the refund for order {order}", "worker": "billing"}
                    ]
                }
            )
        if request.role == "planner":
            told.append(request.messages[-1].text)
        return refund_brain(request)

    ledger = Ledger()
    result = await build_team(ScriptedModel(hasty), ledger).run(GOAL)
    assert "guardrail 'eligibility_first' rejected the plan" in told[1]
    assert "no step before it uses check_eligibility" in told[1]
    assert result.plans[0].steps[0].description.startswith("Check refund eligibility")
    tripped = [e for e in result.events if isinstance(e, GuardrailTripped)]
    assert [(e.guardrail, e.subject) for e in tripped] == [("eligibility_first", "plan")]
    assert ledger.refunds == []
