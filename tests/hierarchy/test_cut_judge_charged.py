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

import json
import logging
from typing import Literal

import anyio
import pytest

from regiment.hierarchy import Budget, Planner, RunCompleted, RunResult, Team, Worker
from regiment.hierarchy.guard import Outcome, Pass, ReplySubject, judge
from regiment.models import Message, ModelRequest, Price, ScriptedModel, Usage

pytestmark = pytest.mark.anyio

PRICE = Price(input=1.0, output=1.0)
MAX_TOKENS = ModelRequest(messages=()).max_tokens  # the judge's request holds no other


def _brain(request: ModelRequest) -> str:
    if request.role == "planner":
        return json.dumps({"steps": [{"id": "s1", "description": "draft"}]})
    return "drafted"


async def _cut_while_judging(side: Literal["step", "planner"]) -> RunResult:
    judging, never = anyio.Event(), anyio.Event()

    async def held(request: ModelRequest) -> str:
        judging.set()
        await never.wait()  # until the run's cancel cuts it
        return "fine"

    judge_model = ScriptedModel(held, price=PRICE)

    async def guard(subject: ReplySubject) -> Outcome:
        await judge(judge_model, ModelRequest(messages=(Message.user("is this fine?"),)))
        return Pass()

    model = ScriptedModel(_brain, price=PRICE)
    on_step = [guard] if side == "step" else []
    team = Team(
        name="judged",
        planner=Planner(model=model, guardrails=[] if on_step else [guard]),
        workers=[Worker(name="w", description="drafts", model=model, guardrails=on_step)],
        budget=Budget(usd=1.0),
    )
    async with team.start() as running:
        async with running.stream("draft") as events:
            async for _ in events:
                await judging.wait()
                break  # leaving the block cancels the run
        ending = events.ending
    assert isinstance(ending, RunCompleted)
    assert ending.result.status == "cancelled"
    return ending.result


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
