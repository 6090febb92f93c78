"""A guard's judge call cut in flight is charged at its most, as the run's other calls are.

A guard's ``judge`` call sent and then cut before its reply came back (its step cut, or
the run cancelled while the planner's guards judged) was not counted at all, though its
provider may bill it: the run's model calls, usage and ``estimated_usage`` left it out.
Now it is charged at the most it could have spent (its estimated input, its held
``max_tokens``, their cost) to the role whose call its guard judged, with an INFO line on
``regiment.run``, and counted as an estimate. A judge inside a planner-side call is
charged as that call is cut, before the run's result is made.

The judge's model is held on an Event it never gets; the run is cancelled once it is.
"""

from __future__ import annotations

import logging
from typing import Literal

import pytest

from regiment.hierarchy import Budget, Planner, RunResult, Team, Worker
from regiment.hierarchy.guard import Outcome, Pass, ReplySubject, judge
from regiment.models import Message, ModelRequest, ScriptedModel, Usage

from .cut_run import MAX_TOKENS, PRICE, brain, cancelled_once, held_until_cut

pytestmark = pytest.mark.anyio


async def _cut_while_judging(side: Literal["step", "planner"]) -> RunResult:
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
        budget=Budget(usd=1.0),
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


async def test_a_steps_judge_call_cut_in_flight_is_charged_at_its_most(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="regiment.run")
    result = await _cut_while_judging("step")
    estimated = _judge_charged(result, "w", caplog, calls=3)
    # the step's own reply, judged when cut, came back: the step's report carries it
    spent = result.usage_by_role["w"]
    assert spent.micro_usd > estimated.micro_usd
    assert spent.output_tokens > MAX_TOKENS


async def test_a_planner_guards_judge_call_cut_in_flight_is_charged_at_its_most(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="regiment.run")
    result = await _cut_while_judging("planner")
    estimated = _judge_charged(result, "planner", caplog)
    plan = [r for r in caplog.records if "was not used" in r.getMessage()]
    assert len(plan) == 1  # the plan's reply, judged when cut: charged what it reported
    spent = result.usage_by_role["planner"]
    assert spent.micro_usd > estimated.micro_usd  # the plan's reply and the judge call
    assert spent.output_tokens > MAX_TOKENS
