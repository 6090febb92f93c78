"""A nested team's own call (its synthesis here) that the run above cannot spare yet
waits for the run above's steps in flight to give back, as its workers' steps do.

A nested run's planner, critic and synthesizer drew what their call lacked through the
step the run serves at once or not at all: beside short steps still in flight (each
holding its share, about to report and give back most of it), a nested synthesis whose
long input the nested run's share could not pay for ended the nested run ``partial``
(its step ``budget_exhausted``, the run above ``partial``) on three times what the whole
run needs. It now waits while such a sibling holds a share, in the call's task (the
nested planner goes on reading its messages), and gives up only once none is left."""

from __future__ import annotations

import anyio
import pytest

from regiment.hierarchy import Budget, Planner, RunResult, Team, Worker
from regiment.models import ModelRequest, ModelResponse, Price, ScriptedModel, text_response

from .brains import plan_json
from .limits import budget_of, spent_of
from .nest import SHORT, notes_after, run_above

pytestmark = pytest.mark.anyio

DEAR = Price(input=100.0, output=100.0)  # the nested planner: a hundred micro-dollars a token
CHEAP = Price(input=1.0, output=1.0)
FINDING = "dug up " * 2000  # what the nested worker finds: its synthesis reads it all


class Nest:
    """s1 goes to a nested team; s2..s8 are short notes, whose last call comes back a
    moment after the nested worker has answered: the nested synthesis is asked while they
    still hold their shares."""

    def __init__(self) -> None:
        self.dug = anyio.Event()
        self.asked: list[str] = []  # the roles the nested planner's model was asked in

    def dear(self, request: ModelRequest) -> str:
        self.asked.append(request.role or "judge")
        if request.role == "planner":
            return plan_json({"id": "c1", "description": "dig"})
        return "the nested answer"

    async def digger(self, request: ModelRequest) -> ModelResponse:
        self.dug.set()
        return text_response(FINDING)

    def team(self, budget: Budget) -> Team:
        child = Team(
            name="inner",
            planner=Planner(model=ScriptedModel(self.dear, price=DEAR)),
            workers=[
                Worker(name="d", description="digs", model=ScriptedModel(self.digger, price=CHEAP))
            ],
        )
        return run_above(child, budget, CHEAP, notes_after(self.dug))

    async def run(self, budget: Budget) -> RunResult:
        with anyio.fail_after(30):  # a wait on a sibling that never gives back would hang
            return await self.team(budget).run("goal")


@pytest.mark.parametrize("limit", ["usd", "tokens"])
async def test_a_nested_synthesis_waits_for_the_run_aboves_steps_to_give_back(
    limit: str,
) -> None:
    whole = await Nest().run(Budget())
    assert whole.status == "completed"
    need = spent_of(whole, limit)
    nest = Nest()
    result = await nest.run(budget_of(limit, need * 3))
    assert (result.status, result.budget_exhausted) == ("completed", None)
    assert nest.asked == ["planner", "synthesizer"]
    assert spent_of(result, limit) <= need * 3
    (s1,) = [r for r in result.steps if r.step_id == "s1"]
    assert (s1.status, s1.output) == ("done", "the nested answer")
    assert len(result.committed) == 1 + SHORT


async def test_a_nested_synthesis_the_run_above_can_never_spare_ends_it_without_hanging() -> None:
    whole = await Nest().run(Budget())
    (s1,) = [r for r in whole.steps if r.step_id == "s1"]
    usd = whole.usage.micro_usd - s1.usage.micro_usd // 2  # never enough for it
    nest = Nest()
    result = await nest.run(Budget(usd=usd / 1_000_000))
    assert (result.status, result.budget_exhausted) == ("partial", "usd")
    assert nest.asked == ["planner"]  # the synthesis it could not pay for was never made
    assert result.usage.micro_usd <= usd
    (s1,) = [r for r in result.steps if r.step_id == "s1"]
    assert s1.status == "budget_exhausted"
    assert s1.error == "team 'inner' ran out of budget (usd)"
