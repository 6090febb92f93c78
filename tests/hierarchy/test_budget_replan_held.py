"""A replan the budget cannot pay for while the old plan's steps still hold their shares
waits for them to report (the replan cancels them) and is asked again.

A step failed its check while seven siblings were in flight; the replan cancels them, but
its call was checked at once, against what they still held: the run ended ``partial``
("no budget left for the replan model call") on three times the tokens or money it
needs, with most of it unspent. Only once every cancelled step has reported does the
budget stop a call it cannot pay for."""

from __future__ import annotations

import re

import anyio
import pytest

from regiment.hierarchy import (
    Budget,
    BudgetExhausted,
    Check,
    Planner,
    StaleReportDropped,
    Team,
    Worker,
)
from regiment.models import (
    ModelRequest,
    ModelResponse,
    ScriptedModel,
    text_response,
    tool_call_response,
)
from regiment.tools import tool

from .limits import PLAN, REPLAN, SIBLINGS, WHOLE, budget_of, kept_to_max_tokens, never, spent_of

pytestmark = pytest.mark.anyio


def _reply(request: ModelRequest) -> ModelResponse:
    if request.role == "planner":
        return text_response(PLAN)
    if request.role == "replanner":
        return text_response(REPLAN)
    if request.role == "synthesizer":
        return text_response("the answer")
    found = re.search(r"Your step \((\w+)\)", request.messages[0].text)
    assert found is not None
    if found.group(1).startswith("s") and found.group(1) != "s0":
        return tool_call_response("dig", {"n": 1})  # waits until the replan cancels it
    return text_response("looked")


def _honest(request: ModelRequest) -> ModelResponse:
    """Keeps to ``max_tokens`` as a real model does."""
    response = _reply(request)
    return kept_to_max_tokens(request, response)


@tool
async def dig(n: int) -> int:
    """Dig (until the step is cancelled)."""
    await anyio.sleep_forever()
    return n


def _team(budget: Budget) -> Team:
    model = ScriptedModel(_honest, price=WHOLE)
    return Team(
        name="t",
        planner=Planner(model=model),
        workers=[
            Worker(
                name="w",
                description="w",
                model=model,
                tools=[dig],
                max_concurrent_steps=SIBLINGS + 1,
            )
        ],
        checks={"never": Check(description="never passes", predicate=never)},
        budget=budget,
        concurrency=SIBLINGS + 1,
    )


@pytest.mark.parametrize("limit", ["tokens", "usd"])
async def test_a_replan_waits_for_the_shares_its_cancelled_steps_held(limit: str) -> None:
    need = spent_of(await _team(Budget()).run("goal"), limit)
    amount = 3 * need
    result = await _team(budget_of(limit, amount)).run("goal")
    # It ended partial: "no budget left for the replan model call".
    assert (result.status, result.budget_exhausted) == ("completed", None)
    assert result.committed == ("r1",)
    assert len(result.plans) == 2
    dropped = [e for e in result.events if isinstance(e, StaleReportDropped)]
    assert len(dropped) == SIBLINGS  # the old tail, cancelled: reported before the replan
    assert spent_of(result, limit) <= amount


@pytest.mark.parametrize("limit", ["tokens", "usd"])
async def test_a_replan_under_a_tight_budget_never_spends_past_it(limit: str) -> None:
    need = spent_of(await _team(Budget()).run("goal"), limit)
    ends = set()
    for percent in range(40, 110, 10):  # from too little for a step to just enough
        amount = need * percent // 100
        result = await _team(budget_of(limit, amount)).run("goal")
        assert spent_of(result, limit) <= amount
        exhausted = [e for e in result.events if isinstance(e, BudgetExhausted)]
        if result.status == "partial":
            assert result.budget_exhausted == limit
            assert len(exhausted) == 1
            ends.add(exhausted[0].detail.split(" step ")[0].split(":")[0])
        else:
            assert (result.status, result.committed, exhausted) == ("completed", ("r1",), [])
            ends.add("completed")
    assert ends == {
        "no budget left to dispatch",
        "no budget left for the replan model call",
        "completed",
    }
