"""A nested team's steps are bounded by the share of the step it serves, and draw what they
lack to start through that step from the run above, as the nested run's calls do.

The nested run's own calls drew through the step it serves (``afford``), but its
dispatch did not: a nested planner whose reply spent all the nested run's money (or
tokens) left its first step unsent, and the nested run ended ``partial`` ("no budget
left to dispatch step c1"), the run above with it, though the run above's other steps
had given back far more than the step needed. Now a nested run with nothing in flight
draws what its next step needs to start (a model call and the synthesis', its first
call's estimated input, a micro-dollar) through its step, under the run above's rule;
the step's calls draw the rest as they go. A run above that cannot spare it still ends
``partial``, and nothing spends past the run above's limit."""

from __future__ import annotations

import json
from typing import Literal, TypeAlias

import anyio
import pytest

from regiment.hierarchy import (
    Budget,
    BudgetExhausted,
    BudgetToppedUp,
    Planner,
    RunResult,
    Team,
    Worker,
)
from regiment.models import (
    ModelRequest,
    ModelResponse,
    Price,
    ScriptedModel,
    TextPart,
    Usage,
    effective_settings,
    estimate_tokens,
)

from .limits import budget_of, spent_of
from .nest import run_above, run_releasing

pytestmark = pytest.mark.anyio

PLANNER = Price(input=10.0, output=1.0)  # the nested planner's reply: a micro-dollar a token
CHEAP = Price(input=1.0, output=1.0)

Limit: TypeAlias = Literal["usd", "tokens"]


def _plan(*steps: dict[str, str]) -> str:
    return json.dumps({"steps": list(steps)})


class Nest:
    """A run above whose step s1 goes to a nested team, beside ``SHORT`` short steps. The
    nested planner answers once those have been committed (they gave back what they did
    not spend), and writes all its reply may hold (padding after a whole plan): it spends
    what the nested run has left, so its first step has nothing to start on."""

    def __init__(self) -> None:
        self.hold = anyio.Event()
        self.dug = 0  # the nested team's worker's calls

    async def nested(self, request: ModelRequest) -> ModelResponse:
        room = effective_settings(None, request).max_tokens or request.max_tokens
        if request.role == "planner":
            await self.hold.wait()
            text = _plan({"id": "c1", "description": "dig"}, {"id": "c2", "description": "sift"})
            written = min(room, 2_000)
        else:
            text, written = "the nested answer", 5
        usage = Usage(input_tokens=estimate_tokens(request), output_tokens=written)
        return ModelResponse(
            parts=(TextPart(text=text),), usage=usage, stop_reason="end_turn", model="m"
        )

    def digger(self, request: ModelRequest) -> str:
        self.dug += 1
        return "dug"

    def team(self, budget: Budget) -> Team:
        cheap = ScriptedModel(self.digger, price=CHEAP)
        child = Team(
            name="inner",
            planner=Planner(
                model=ScriptedModel(self.nested, price=PLANNER),
                synthesizer_model=ScriptedModel(lambda _: "the nested answer", price=CHEAP),
            ),
            workers=[Worker(name="d", description="digs", model=cheap)],
        )
        return run_above(child, budget, CHEAP)

    async def run(self, budget: Budget) -> RunResult:
        return await run_releasing(self.team(budget), self.hold)


@pytest.mark.parametrize("limit", ["usd", "tokens"])
async def test_a_nested_run_draws_what_its_first_step_needs_through_its_step(
    limit: Limit,
) -> None:
    need = spent_of(await Nest().run(Budget()), limit)
    amount = 4 * need  # the nested share (an eighth) pays for its planner's call, no more
    nest = Nest()
    result = await nest.run(budget_of(limit, amount))
    # It ended partial: "no budget left to dispatch step c1" in the nested run.
    assert (result.status, result.budget_exhausted) == ("completed", None)
    assert not [e for e in result.events if isinstance(e, BudgetExhausted)]
    (s1,) = [r for r in result.steps if r.step_id == "s1"]
    assert (s1.status, s1.output) == ("done", "the nested answer")
    assert nest.dug == 2  # both nested steps ran
    assert spent_of(result, limit) <= amount
    topped = [e for e in result.events if isinstance(e, BudgetToppedUp)]
    assert {e.step_id for e in topped} == {"s1"}  # drawn through the step it serves


@pytest.mark.parametrize("limit", ["usd", "tokens"])
async def test_a_nested_run_never_spends_past_the_run_above(limit: Limit) -> None:
    need = spent_of(await Nest().run(Budget()), limit)
    ends = set()
    for tenths in (2, 5, 10, 20, 30, 40):  # too little for any nested step, up to plenty
        amount = need * tenths // 10
        nest = Nest()
        result = await nest.run(budget_of(limit, amount))
        assert spent_of(result, limit) <= amount
        (s1,) = [r for r in result.steps if r.step_id == "s1"]
        if result.status == "partial":
            assert result.budget_exhausted == limit
            assert s1.status == "budget_exhausted"
        else:
            assert (result.status, s1.status, nest.dug) == ("completed", "done", 2)
        ends.add(result.status)
    assert ends == {"partial", "completed"}
