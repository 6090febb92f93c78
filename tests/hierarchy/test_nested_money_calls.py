"""A nested team's own calls (its planner's, critic's, synthesizer's) are held to the money
the step it serves was given, and draw what they lack through that step from the run
above, as its workers' steps do. They drew only on the nested run's own share: a
nested run whose synthesis its share could not pay for ended ``partial`` (its step
``budget_exhausted``, the run above ``partial``) while the run above had money to spare."""

from __future__ import annotations

import json
from typing import Literal, TypeAlias

import anyio
import pytest

from regiment.hierarchy import (
    Budget,
    BudgetToppedUp,
    Critic,
    Planner,
    RunResult,
    Team,
    Worker,
)
from regiment.hierarchy.guard import AnswerSubject, Outcome, Pass, guardrail, judge
from regiment.models import (
    Message,
    ModelRequest,
    ModelResponse,
    Price,
    ScriptedModel,
    text_response,
)

from .brains import plan_json
from .nest import run_above, run_releasing

pytestmark = pytest.mark.anyio

DEAR = Price(input=100.0, output=100.0)  # the nested team's planner: 100 micro-dollars a token
CHEAP = Price(input=1.0, output=1.0)
FINDING = "dug up " * 2000  # what the nested team's worker finds: its synthesis reads it


Dear: TypeAlias = Literal["synthesis", "round", "judge"]


class Nest:
    """A run above whose step s1 goes to a nested team, beside ``SHORT`` short steps.
    The nested team's worker answers once the short steps have been committed (they
    then gave back what they did not spend); then a call that reads its long finding,
    at a dear price, is more than the nested run's share can pay for: its planner
    writing the answer (``synthesis``), its planner planning a second round after its
    critic found the goal unmet (``round``: its answer then by a cheap model), or a
    guard of its answer asking a dear judge (``judge``: its planner cheap)."""

    def __init__(self, dear: Dear = "synthesis") -> None:
        self.hold = anyio.Event()
        self.mode = dear
        self.asked: list[str] = []  # the roles the nested team's models were asked in
        self.critiques = 0

    def dear(self, request: ModelRequest) -> ModelResponse | str:
        self.asked.append(request.role or "judge")  # a judge asks with no role
        if request.role == "planner":
            return plan_json({"id": "c1", "description": "dig"})
        if request.role == "replanner":
            return plan_json()  # nothing more to do: the answer
        if request.role == "critic":
            self.critiques += 1
            return json.dumps({"passed": self.critiques > 1, "feedback": "dig deeper"})
        return "the nested answer"

    async def digger(self, request: ModelRequest) -> ModelResponse | str:
        await self.hold.wait()
        return text_response(FINDING)

    def team(self, budget: Budget) -> Team:
        dear = ScriptedModel(self.dear, price=DEAR)

        @guardrail("answer", model=dear)
        async def checked(subject: AnswerSubject) -> Outcome:
            await judge(dear, ModelRequest(messages=(Message.user(FINDING),)))
            return Pass()

        cheap = ScriptedModel(self.dear, price=CHEAP)
        child = Team(
            name="inner",
            planner=Planner(
                model=cheap if self.mode == "judge" else dear,
                synthesizer_model=cheap if self.mode == "round" else None,
                synthesizer_guardrails=[checked] if self.mode == "judge" else [],
            ),
            workers=[
                Worker(name="d", description="digs", model=ScriptedModel(self.digger, price=CHEAP))
            ],
            critic=Critic(model=cheap) if self.mode == "round" else None,
        )
        return run_above(child, budget, CHEAP)

    async def run(self, budget: Budget) -> RunResult:
        return await run_releasing(self.team(budget), self.hold)


async def _need(dear: Dear = "synthesis") -> tuple[int, int]:
    """What the whole run spends with no limit, and the nested run."""
    nest = Nest(dear)
    result = await nest.run(Budget())
    assert result.status == "completed"
    (s1,) = [r for r in result.steps if r.step_id == "s1"]
    return result.usage.micro_usd, s1.usage.micro_usd


ASKED: dict[Dear, list[str]] = {
    "synthesis": ["planner", "synthesizer"],
    "round": ["planner", "critic", "replanner", "synthesizer"],  # a round of no step: answered
    "judge": ["planner", "synthesizer", "judge"],
}


@pytest.mark.parametrize("dear", ["synthesis", "round", "judge"])
async def test_a_nested_call_draws_the_money_it_lacks_from_the_run_above(dear: Dear) -> None:
    need, nested = await _need(dear)
    usd = 3 * need
    # The nested run's share is about an eighth of what the run above had: its dear
    # call (most of what it spends) does not fit in it.
    assert nested > usd // 8
    nest = Nest(dear)
    result = await nest.run(Budget(usd=usd / 1_000_000))
    assert (result.status, result.budget_exhausted) == ("completed", None)
    assert nest.asked == ASKED[dear]
    assert result.usage.micro_usd <= usd
    (s1,) = [r for r in result.steps if r.step_id == "s1"]
    assert (s1.status, s1.output) == ("done", "the nested answer")
    topped = [e for e in result.events if isinstance(e, BudgetToppedUp)]
    assert [e.step_id for e in topped] == ["s1"]  # the run above's step, for its nested run
    assert (topped[0].granted.micro_usd or 0) > 0


async def test_a_nested_synthesis_the_run_above_cannot_spare_is_not_made() -> None:
    need, nested = await _need()
    usd = need - nested // 2  # too little for the nested run's synthesis, even topped up
    nest = Nest()
    result = await nest.run(Budget(usd=usd / 1_000_000))
    assert (result.status, result.budget_exhausted) == ("partial", "usd")
    assert nest.asked == ["planner"]  # held: the synthesis it could not pay never ran
    assert result.usage.micro_usd <= usd
    (s1,) = [r for r in result.steps if r.step_id == "s1"]
    assert s1.status == "budget_exhausted"
