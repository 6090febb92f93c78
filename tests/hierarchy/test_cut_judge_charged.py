"""A guard's judge call cut in flight is charged at its most, as the run's other calls are.

A guard's ``judge`` call sent and then cut before its reply came back (its step cut, or
the run cancelled while the planner's guards judged) was not counted at all, though its
provider may bill it: the run's model calls, usage and ``estimated_usage`` left it out.
Now it is charged at the most it could have spent (its estimated input, its held
``max_tokens``, their cost) to the role whose call its guard judged, with an INFO line on
``regiment.run``, and counted as an estimate. A judge inside a planner-side call is
charged as that call is cut, before the run's result is made.

The judge's model is held on an Event it never gets; the run is cancelled once it is.
Counted the same whether the budget limits spending or nothing (``Budget()``): with no
limit the cut judge call used to add nothing to ``model_calls`` nor to the usage.
"""

from __future__ import annotations

import logging
from typing import Literal

import pytest

from regiment.hierarchy import Budget, Critic, Planner, RunResult, Team, Worker
from regiment.hierarchy.guard import Outcome, Pass, ReplySubject, judge
from regiment.models import Message, ModelRequest, ScriptedModel, Usage

from .cut_run import MAX_TOKENS, PRICE, brain, cancelled_once, held_until_cut

pytestmark = pytest.mark.anyio


BUDGETS = pytest.mark.parametrize("budget", [Budget(usd=1.0), Budget()], ids=["usd", "none"])


async def _cut_while_judging(side: Literal["step", "planner"], budget: Budget) -> RunResult:
    judging, held = held_until_cut()
    judge_model = ScriptedModel(held, price=PRICE)

    async def guard(subject: ReplySubject) -> Outcome:
        await judge(judge_model, ModelRequest(messages=(Message.user("is this fine?"),)))
        return Pass()

    model = ScriptedModel(brain, price=PRICE)
    on_step = [guard] if side == "step" else []
    team = Team(
        name="judged",
        planner=Planner(model=model, guardrails=[] if on_step else [guard]),
        workers=[Worker(name="w", description="drafts", model=model, guardrails=on_step)],
        budget=budget,
    )
    return await cancelled_once(team, judging.wait)


def _judge_charged(
    result: RunResult, role: str, caplog: pytest.LogCaptureFixture, calls: int = 2
) -> Usage:
    (line,) = [r.getMessage() for r in caplog.records if "judge" in r.getMessage()]
    assert "cut in flight" in line
    assert line.startswith(f"{role}: ") or f": {role}: " in line
    estimated = result.estimated_usage
    assert estimated.output_tokens == MAX_TOKENS  # its max_tokens: the most it could write
    assert estimated.micro_usd > 0
    assert result.model_calls == calls  # the plan, the cut judge call (and the step's)
    return estimated


@BUDGETS
async def test_a_steps_judge_call_cut_in_flight_is_charged_at_its_most(
    budget: Budget, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="regiment.run")
    result = await _cut_while_judging("step", budget)
    estimated = _judge_charged(result, "w", caplog, calls=3)
    # the step's own reply, judged when cut, came back: the step's report carries it
    spent = result.usage_by_role["w"]
    assert spent.micro_usd > estimated.micro_usd
    assert spent.output_tokens > MAX_TOKENS


@BUDGETS
async def test_a_planner_guards_judge_call_cut_in_flight_is_charged_at_its_most(
    budget: Budget, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="regiment.run")
    result = await _cut_while_judging("planner", budget)
    if budget.usd is None:  # the judge alone: the plan's reply, cut, is a planner call's
        estimated = _judge_charged(result, "planner", caplog, calls=1)
        assert result.usage_by_role["planner"] == estimated
        return
    estimated = _judge_charged(result, "planner", caplog)
    plan = [r for r in caplog.records if "was not used" in r.getMessage()]
    assert len(plan) == 1  # the plan's reply, judged when cut: charged what it reported
    spent = result.usage_by_role["planner"]
    assert spent.micro_usd > estimated.micro_usd  # the plan's reply and the judge call
    assert spent.output_tokens > MAX_TOKENS


@BUDGETS
async def test_a_critique_cut_in_flight_is_counted_whatever_the_budget(
    budget: Budget, caplog: pytest.LogCaptureFixture
) -> None:
    """The critic's call is held until the run's cancel cuts it: charged at its most to
    the critic (with no limit it used to add nothing: 2 model calls, no estimate)."""
    caplog.set_level(logging.INFO, logger="regiment.run")
    critiquing, held = held_until_cut()
    model = ScriptedModel(brain, price=PRICE)
    team = Team(
        name="judged",
        planner=Planner(model=model),
        workers=[Worker(name="w", description="drafts", model=model)],
        critic=Critic(model=ScriptedModel(held, price=PRICE)),
        budget=budget,
    )
    result = await cancelled_once(team, critiquing.wait)
    assert result.model_calls == 3  # the plan, the step's, the cut critique
    estimated = result.estimated_usage
    assert estimated.output_tokens > 0
    assert estimated.micro_usd > 0
    assert result.usage_by_role["critic"] == estimated
    (line,) = [r.getMessage() for r in caplog.records if "cut in flight" in r.getMessage()]
    assert ": critic: its model call critique" in line
