"""A nested team's own calls (its planner's, critic's, synthesizer's) are held to the money
the step it serves was given, and draw what they lack through that step from the run
above, as its workers' steps do. They drew only on the nested run's own share: a
nested run whose synthesis its share could not pay for ended ``partial`` (its step
``budget_exhausted``, the run above ``partial``) while the run above had money to spare."""

from __future__ import annotations

import anyio
import pytest

from regiment.hierarchy import (
    Budget,
    BudgetToppedUp,
    Planner,
    RunResult,
    StepCompleted,
    Team,
    TeamWorker,
    Worker,
)
from regiment.hierarchy.events import RunCompleted
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

pytestmark = pytest.mark.anyio

DEAR = Price(input=100.0, output=100.0)  # the nested team's planner: 100 micro-dollars a token
CHEAP = Price(input=1.0, output=1.0)
SHORT = 7  # the run above's short steps beside the one it gives the nested team
FINDING = "dug up " * 2000  # what the nested team's worker finds: its synthesis reads it


class Nest:
    """A run above whose step s1 goes to a nested team, beside ``SHORT`` short steps.
    The nested team's worker answers once the short steps have been committed (they
    then gave back what they did not spend); its planner's model, dear, plans and then
    writes the nested run's answer from that long finding (``judged``: its planner is
    cheap, and a guard of its answer asks a dear judge about the finding)."""

    def __init__(self, judged: bool = False) -> None:
        self.hold = anyio.Event()
        self.judged = judged
        self.asked: list[
            str
        ] = []  # the roles the nested planner's (and judge's) model was asked in

    def dear(self, request: ModelRequest) -> ModelResponse | str:
        self.asked.append(request.role or "judge")  # a judge asks with no role
        if request.role in ("planner", "replanner"):
            return plan_json({"id": "c1", "description": "dig"})
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

        child = Team(
            name="inner",
            planner=Planner(
                model=ScriptedModel(self.dear, price=CHEAP) if self.judged else dear,
                synthesizer_guardrails=[checked] if self.judged else [],
            ),
            workers=[
                Worker(name="d", description="digs", model=ScriptedModel(self.digger, price=CHEAP))
            ],
        )
        steps = [{"id": "s1", "description": "research", "worker": "research"}]
        steps += [{"id": f"s{i}", "description": f"note {i}", "worker": "w"} for i in range(2, 9)]
        plan = plan_json(*steps)

        def above(request: ModelRequest) -> str:
            return plan if request.role == "planner" else "noted"

        model = ScriptedModel(above, price=CHEAP)
        return Team(
            name="outer",
            planner=Planner(model=model, max_steps=8),
            workers=[
                TeamWorker(name="research", description="digs deep", team=child),
                Worker(name="w", description="notes", model=model),
            ],
            budget=budget,
            concurrency=8,
        )

    async def run(self, budget: Budget) -> RunResult:
        completed = 0
        async with self.team(budget).start() as running, running.stream("goal") as events:
            async for event in events:
                completed += isinstance(event, StepCompleted)
                if completed == SHORT:
                    self.hold.set()
        assert isinstance(events.ending, RunCompleted)
        return events.ending.result


async def _need(judged: bool = False) -> tuple[int, int]:
    """What the whole run spends with no limit, and the nested run."""
    nest = Nest(judged)
    result = await nest.run(Budget())
    assert result.status == "completed"
    (s1,) = [r for r in result.steps if r.step_id == "s1"]
    return result.usage.micro_usd, s1.usage.micro_usd


@pytest.mark.parametrize("judged", [False, True], ids=["synthesis", "answer judge"])
async def test_a_nested_call_draws_the_money_it_lacks_from_the_run_above(judged: bool) -> None:
    need, nested = await _need(judged)
    usd = 3 * need
    # The nested run's share is about an eighth of what the run above had: its dear
    # synthesis (or its answer's judge: most of what it spends) does not fit in it.
    assert nested > usd // 8
    nest = Nest(judged)
    result = await nest.run(Budget(usd=usd / 1_000_000))
    assert (result.status, result.budget_exhausted) == ("completed", None)
    assert nest.asked == ["planner", "synthesizer", *(["judge"] if judged else [])]
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
