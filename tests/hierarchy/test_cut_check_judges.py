"""The judge calls of a plan or answer guard cut as the run ends are in its result.

A plan guard (or an answer guard) runs in a task of its own, off the planner's turn, and
the run's end cancels it. Its judge calls were charged, if at all, as that cancel landed
in the guard's task: after the run's result was made. So a run cancelled while its plan
guard's second judge call was held counted neither that call (at its most) nor the
first, which had answered and was billed: the result said 1 model call (the plan). Now
each such check is watched as a planner-side call is (``CutWatch``) and its judges are
charged as the run stops it, before the result is made: the held one at its most (an
estimate), the answered one at what it reported.

The second judge's model is held on an Event it never gets; the run is cancelled once it is.
"""

from __future__ import annotations

import logging
from typing import Literal

import pytest

from regiment.hierarchy import Budget, Planner, RunResult, Team, Worker
from regiment.hierarchy.guard import AnswerSubject, Outcome, Pass, PlanSubject, judge
from regiment.models import Message, ModelRequest, ScriptedModel, Usage

from .cut_run import MAX_TOKENS, PRICE, brain, cancelled_once, held_until_cut

pytestmark = pytest.mark.anyio


async def _cut_while_checking(kind: Literal["plan", "answer"]) -> tuple[RunResult, Usage]:
    judging, held = held_until_cut()
    said: list[Usage] = []

    quick = ScriptedModel(lambda request: "fine", price=PRICE)
    slow = ScriptedModel(held, price=PRICE)

    async def asked() -> None:
        said.append((await judge(quick, ModelRequest(messages=(Message.user("one?"),)))).usage)
        await judge(slow, ModelRequest(messages=(Message.user("two?"),)))

    async def plan_guard(subject: PlanSubject) -> Outcome:
        await asked()
        return Pass()

    async def answer_guard(subject: AnswerSubject) -> Outcome:
        await asked()
        return Pass()

    model = ScriptedModel(brain, price=PRICE)
    planner = (
        Planner(model=model, guardrails=[plan_guard])
        if kind == "plan"
        else Planner(model=model, synthesizer_guardrails=[answer_guard])
    )
    team = Team(
        name="checked",
        planner=planner,
        workers=[Worker(name="w", description="drafts", model=model)],
        budget=Budget(usd=1.0),
    )
    result = await cancelled_once(team, judging.wait)
    (first,) = said
    return result, first


async def test_a_plan_guards_judges_cut_as_the_run_ends_are_in_its_result(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="regiment.run")
    result, said = await _cut_while_checking("plan")
    assert result.model_calls == 3  # the plan, the answered judge, the held judge
    assert result.estimated_usage.output_tokens == MAX_TOKENS  # the held one, at its most
    planner = result.usage_by_role["planner"]
    assert planner.output_tokens > MAX_TOKENS + said.output_tokens  # and the plan's reply
    assert any("guardrail's judge" in r.getMessage() for r in caplog.records)


async def test_an_answer_guards_judges_cut_as_the_run_ends_are_in_its_result() -> None:
    result, said = await _cut_while_checking("answer")
    assert result.model_calls == 5  # the plan, s1, the synthesis, both judge calls
    assert result.estimated_usage.output_tokens == MAX_TOKENS
    synthesizer = result.usage_by_role["synthesizer"]
    assert synthesizer.output_tokens > MAX_TOKENS + said.output_tokens  # and its reply
