"""What guards log under ``regiment.guardrail``: every trip, the plan's and the
answer's too, carries its run (``RunContextFilter``), so a service's log tells
which of its runs a guard stopped."""

from __future__ import annotations

import logging

import pytest

from regiment.hierarchy import Planner, RunContextFilter
from regiment.models import ScriptedModel

from .brains import Brain, plan_json
from .test_guardrails_run import Answers, make_team, no_promises, refund_first

pytestmark = pytest.mark.anyio


async def test_a_plan_and_an_answer_guards_trips_are_logged_with_their_run(
    caplog: pytest.LogCaptureFixture,
) -> None:
    plans = [plan_json({"description": "refund order 7"}), plan_json({"description": "look"})]
    brain = Answers(Brain(plans), ["we promise a refund", "order checked"])
    model = ScriptedModel(brain)
    planner = Planner(model=model, guardrails=[refund_first], synthesizer_guardrails=[no_promises])
    caplog.handler.addFilter(RunContextFilter())
    with caplog.at_level(logging.INFO, logger="regiment.guardrail"):
        async with make_team(model, planner).start() as running:
            result = await running.run("refund order 7")
    assert result.status == "completed"
    records = [r for r in caplog.records if r.name == "regiment.guardrail"]
    assert [(r.getMessage(), r.__dict__.get("run_id")) for r in records] == [
        (
            "guardrail refund_first tripped on the plan: check eligibility before refunding",
            result.run_id,
        ),
        (
            "guardrail no_promises tripped on the answer: the answer promises a refund",
            result.run_id,
        ),
    ]
