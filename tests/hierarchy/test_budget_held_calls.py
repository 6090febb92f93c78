"""A budget with two limits names the one that stopped the run.

Model calls go first come, first served up to a step's cap (a team worker's is its
team's ``Budget.model_calls``, else 64), so the first step of a plan can hold nearly all
of a run's model calls, and no other step can be sent before it reports. Its top-ups
still kept an even share of tokens (money, tool calls) for every step still to be sent:
the step ran out of tokens with most of them unspent and the run ended ``partial`` on
``tokens`` (a nested team on ``Budget(tokens=20000, model_calls=60)`` spent 3,007 of
20,000). A top-up now keeps parts only for the steps that could start before the step
asking reports; every limit still holds under fan-out."""

from __future__ import annotations

import json

import anyio
import anyio.lowlevel
import pytest

from regiment.hierarchy import Budget, Planner, RunResult, Team, Worker
from regiment.hierarchy._budget import BudgetLedger
from regiment.hierarchy._top_up import TopUps
from regiment.hierarchy.workers._team_worker import TeamWorker
from regiment.models import (
    ModelRequest,
    ModelResponse,
    Price,
    ScriptedModel,
    text_response,
    tool_call_response,
)
from regiment.tools import tool

from .limits import kept_to_max_tokens

pytestmark = pytest.mark.anyio

PRICE = Price(input=3, output=15)


def _brain(steps: int):  # type: ignore[no-untyped-def]
    """Plans ``steps`` steps; each step calls its tool three times, then answers; every
    reply kept to the request's ``max_tokens``, as a real model's is (a scripted reply
    written past the room its call was given would overspend whatever the run held)."""

    def reply(request: ModelRequest) -> str | ModelResponse:
        if request.role in ("planner", "replanner"):
            text = json.dumps({"steps": [{"description": f"part {i}"} for i in range(steps)]})
            return kept_to_max_tokens(request, text_response(text))
        if request.role == "worker":
            asked = sum(1 for m in request.messages if m.role == "assistant")
            answer = tool_call_response("work", {"n": asked}) if asked < 3 else text_response("ok")
            return kept_to_max_tokens(request, answer)
        return kept_to_max_tokens(request, text_response("done"))

    return reply


class _Run:
    def __init__(self) -> None:
        self.bodies = 0  # tool bodies that really ran

    def worker(self, model: ScriptedModel, iterations: int = 8) -> Worker:
        async def work(n: int) -> str:
            """Work."""
            self.bodies += 1
            await anyio.lowlevel.checkpoint()
            return "ok"

        tools = [tool(name="work")(work)]
        return Worker(
            name="w", description="d", model=model, tools=tools, max_iterations=iterations
        )

    async def single(self, budget: Budget, iterations: int = 8) -> RunResult:
        model = ScriptedModel(_brain(4), price=PRICE)
        team = Team(
            name="t",
            planner=Planner(model=model),
            workers=[self.worker(model, iterations)],
            budget=budget,
            concurrency=4,
        )
        return await team.run("g")

    async def nested(self, budget: Budget) -> RunResult:
        model = ScriptedModel(_brain(6), price=PRICE)
        inner = Team(
            name="inner", planner=Planner(model=model), workers=[self.worker(model)], concurrency=6
        )
        sub = TeamWorker(name="sub", description="sub team", team=inner)
        outer = Team(
            name="outer", planner=Planner(model=model), workers=[sub], budget=budget, concurrency=6
        )
        return await outer.run("g")


def _within(result: RunResult, budget: Budget, bodies: int) -> None:
    """No limit exceeded, and every tool call that ran is reported."""
    assert bodies == result.tool_calls
    assert budget.model_calls is None or result.model_calls <= budget.model_calls
    assert budget.tool_calls is None or result.tool_calls <= budget.tool_calls
    assert budget.tokens is None or result.usage.total_tokens <= budget.tokens
    assert budget.usd is None or result.usage.micro_usd <= round(budget.usd * 1_000_000)


@pytest.mark.parametrize(
    "budget",
    [
        Budget(tokens=60_000, model_calls=60),  # ended on "tokens" having spent 8,851
        Budget(usd=0.2, model_calls=40),  # on "usd" having spent $0.0206
        Budget(tool_calls=30, model_calls=40),  # on "tool_calls" having run 5
    ],
)
async def test_a_nested_run_stopped_by_model_calls_names_them(budget: Budget) -> None:
    # Each nested run takes 26 model calls, 18 tool calls and about 9,000 tokens ($0.013):
    # the model calls pay for one or two, the other limit for more.
    run = _Run()
    result = await run.nested(budget)
    _within(result, budget, run.bodies)
    assert (result.status, result.budget_exhausted) == ("partial", "model_calls")
    assert budget.model_calls is not None
    assert result.model_calls > budget.model_calls - 26  # too few left for another
    assert result.usage.total_tokens < 30_000


async def test_a_nested_run_spends_most_of_the_tokens_that_stop_it() -> None:
    budget, run = Budget(tokens=20_000, model_calls=60), _Run()
    result = await run.nested(budget)
    _within(result, budget, run.bodies)
    assert (result.status, result.budget_exhausted) == ("partial", "tokens")
    assert result.usage.total_tokens > 15_000  # it stopped at 3,007
    assert result.model_calls < 60


@pytest.mark.parametrize(
    ("budget", "limit", "committed"),
    [
        (Budget(tokens=6_000, model_calls=12), "model_calls", 2),  # was "tokens" at 1,506
        (Budget(usd=0.01, model_calls=8), "usd", 1),  # was "usd" at $0.0022
        (Budget(tool_calls=20, model_calls=8), "model_calls", 1),
    ],
)
async def test_a_single_level_run_names_the_binding_limit(
    budget: Budget, limit: str, committed: int
) -> None:
    # Four steps of four calls each (three tool calls and an answer), a cap of eight.
    run = _Run()
    result = await run.single(budget)
    _within(result, budget, run.bodies)
    assert (result.status, result.budget_exhausted) == ("partial", limit)
    if limit == "model_calls":
        assert budget.model_calls is not None
        assert result.model_calls >= budget.model_calls - 2
    else:  # what is left is the synthesis' part
        assert result.usage.micro_usd > 8_000
    assert len(result.committed) == committed  # the first step no longer ends short


@pytest.mark.parametrize("iterations", [2, 4, 8])
@pytest.mark.parametrize(
    "budget",
    [Budget(tokens=t, model_calls=m) for t in (1_500, 3_000, 6_000) for m in (6, 9, 14)]
    + [Budget(usd=0.01, model_calls=9, tool_calls=5), Budget(tokens=4_000, tool_calls=6)],
)
async def test_no_limit_is_overspent_under_fan_out(budget: Budget, iterations: int) -> None:
    run = _Run()
    result = await run.single(budget, iterations)
    _within(result, budget, run.bodies)
    assert result.status in ("completed", "partial")


def test_a_top_up_keeps_no_part_for_steps_the_model_calls_cannot_send() -> None:
    ledger = BudgetLedger(Budget(tokens=1_000, model_calls=10))
    share = ledger.split(4)[0]
    assert ledger.reserve(0, model_calls_cap=8, keep_model_calls=1, share=share) is not None
    top_ups = TopUps()
    top_ups.ledger, top_ups.unsent, top_ups.caps = ledger, lambda: 3, (8,)
    # 10 - 8 held leaves one call besides the synthesis': no step of cap 8 starts
    # before step 0 reports, so only the synthesis keeps its part (1,000 // 5).
    grown = top_ups.grant(0, {"tokens": (100, 100)})
    assert grown is not None
    assert grown.tokens == 250 + 550
    ledger.release(0)
    ledger.reserve(0, model_calls_cap=8, keep_model_calls=1, share=share)
    top_ups.caps = (1,)  # one call starts a step: one of the three can be sent
    grown = top_ups.grant(0, {"tokens": (100, 100)})
    assert grown is not None
    assert grown.tokens == 250 + 350
