"""A round whose critique the money cannot pay for, with an answer after it, is answered
unjudged (``partial``), as for tokens: the check before the critique counted only model
calls and tokens, so under ``Budget(usd=...)`` the critique spent what the answer needed
and the run ended with no answer synthesised."""

from __future__ import annotations

import json

import pytest

from regiment.hierarchy import Budget, BudgetExhausted, Critic, Planner, RunResult, Team, Worker
from regiment.models import ModelRequest, Price, ScriptedModel

from .brains import plan_json

pytestmark = pytest.mark.anyio

WHOLE = Price(input=1.0, output=2.0)  # whole micro-dollars a token: input + 2 x output
LONG = "a finding " * 200  # the step's output: critique and synthesis both read it


def _brain(request: ModelRequest) -> str:
    if request.role in ("planner", "replanner"):
        return plan_json({"id": "s1", "description": "find"})
    if request.role == "critic":
        return json.dumps({"passed": True, "feedback": ""})
    return LONG if request.role == "worker" else "the answer"


async def _run(budget: Budget) -> RunResult:
    model = ScriptedModel(_brain, price=WHOLE)
    team = Team(
        name="t",
        planner=Planner(model=model),
        workers=[Worker(name="w", description="finds", model=model)],
        critic=Critic(),
        budget=budget,
    )
    return await team.run("goal")


async def test_a_critique_the_money_cannot_pay_for_with_an_answer_is_left_out() -> None:
    unheld = await _run(Budget())
    critique = unheld.usage_by_role["critic"].micro_usd
    # Enough for everything but the critique: the answer, not the critique, gets it.
    usd = unheld.usage.micro_usd - critique
    result = await _run(Budget(usd=usd / 1_000_000))
    assert (result.status, result.budget_exhausted) == ("partial", "usd")
    assert "critic" not in result.usage_by_role  # not asked: it would leave no answer
    assert result.answer == "the answer"  # synthesised, from the round left unjudged
    assert result.usage.micro_usd <= usd
    (ended,) = [e for e in result.events if isinstance(e, BudgetExhausted)]
    assert ended.detail == "no budget left to critique round 1 and then answer"
