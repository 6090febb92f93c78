"""Estimates roll up through every level of nested teams, once.

A team two levels down (a ``TeamWorker`` of a ``TeamWorker``) whose call is cut in flight
by the top run's cancel charges it at its most; the step each run serves reports it as
an estimate (``StepReport.estimated``), so the top run's ``estimated_usage`` is exactly
that call's most, however deep it was, and its ``usage`` counts it once. The top run limits
only ``model_calls``; the nested teams have no budget of their own. Checked for a
worker's call, a synthesis, and a guard's judge call two levels down.
"""

from __future__ import annotations

import json
from typing import Literal

import anyio
import pytest

from regiment.hierarchy import Budget, Planner, RunCompleted, RunResult, Team, TeamWorker, Worker
from regiment.hierarchy.guard import Outcome, Pass, ReplySubject, judge
from regiment.models import Message, ModelRequest, Price, ScriptedModel

pytestmark = pytest.mark.anyio

PRICE = Price(input=1.0, output=1.0)

Held = Literal["worker", "synthesizer", "judge"]


def _brain(request: ModelRequest) -> str:
    if request.role == "planner":
        return json.dumps({"steps": [{"id": "s1", "description": "draft"}]})
    return "drafted"


async def _deep_cut(held: Held) -> RunResult:
    asked, never = anyio.Event(), anyio.Event()

    async def holding(request: ModelRequest) -> str:
        if held == "synthesizer" and request.role != "synthesizer":
            return _brain(request)
        asked.set()
        await never.wait()  # until the top run's cancel cuts it
        return "never"

    slow = ScriptedModel(holding, price=PRICE)
    quick = ScriptedModel(_brain, price=PRICE)

    async def judged(subject: ReplySubject) -> Outcome:
        await judge(slow, ModelRequest(messages=(Message.user("fine?"),)))
        return Pass()

    inner = Team(
        name="inner",
        planner=Planner(model=slow if held == "synthesizer" else quick),
        workers=[
            Worker(
                name="iw",
                description="drafts",
                model=slow if held == "worker" else quick,
                guardrails=[judged] if held == "judge" else [],
            )
        ],
    )
    middle = Team(
        name="middle",
        planner=Planner(model=quick),
        workers=[TeamWorker(name="deep", description="drafts, nested", team=inner)],
    )
    top = Team(
        name="top",
        planner=Planner(model=quick),
        workers=[TeamWorker(name="nest", description="drafts, nested", team=middle)],
        budget=Budget(model_calls=40),
    )
    async with top.start() as running:
        async with running.stream("draft") as events:
            async for _ in events:
                await asked.wait()
                break  # leaving the block cancels the run
        ending = events.ending
    assert isinstance(ending, RunCompleted)
    assert ending.result.status == "cancelled"
    return ending.result


@pytest.mark.parametrize(("held", "calls"), [("worker", 4), ("synthesizer", 5), ("judge", 5)])
async def test_a_call_cut_two_levels_down_is_the_top_runs_estimate_once(
    held: Held, calls: int
) -> None:
    result = await _deep_cut(held)
    # the three plans, then the held call (after s1's reply, for the synthesis and judge)
    assert result.model_calls == calls
    estimated = result.estimated_usage
    assert estimated.output_tokens == ModelRequest(messages=()).max_tokens  # one call's most
    assert estimated.micro_usd > 0
    nest = result.usage_by_role["nest"]  # the step the middle run served: all below it
    assert nest.output_tokens > estimated.output_tokens
    assert nest.output_tokens < 2 * estimated.output_tokens  # counted once
