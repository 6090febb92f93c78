"""A run that ends ``partial`` (its budget spent before the synthesis) answers with its
committed outputs verbatim. With answer guards on the team, that answer goes through
them as a synthesized one does: released if they pass, as they rewrote it, withheld
(naming the guard and its reason) if one trips. The budget is spent: a guard's judge
call is refused, and with a wall clock a guard that does not finish withholds it."""

from __future__ import annotations

import dataclasses

import anyio
import pytest

from regiment.hierarchy import (
    Budget,
    GuardrailRewrote,
    GuardrailTripped,
    Planner,
    RunResult,
    Team,
    Worker,
)
from regiment.hierarchy.guard import (
    AnswerSubject,
    GuardLike,
    Outcome,
    Pass,
    Rewrite,
    Trip,
    judge,
)
from regiment.models import ModelRequest, ScriptedModel

from .brains import Brain, plan_json

pytestmark = pytest.mark.anyio

PLAN = plan_json(
    {"description": "mail ann@example.com"}, {"description": "file it", "depends_on": ["s1"]}
)
HEAD = "Partial result (budget exhausted: model_calls).\ns1: "


def no_addresses(answer: AnswerSubject) -> Outcome:
    return Trip("it gives an e-mail address") if "@" in answer.text else Pass()


def mask(answer: AnswerSubject) -> Outcome:
    return Rewrite(dataclasses.replace(answer, text=answer.text.replace("@", " at ")))


async def partial_run(*answer_guards: GuardLike, budget: Budget | None = None) -> RunResult:
    model = ScriptedModel(Brain([PLAN]))  # the worker echoes its step: "did: mail ann@..."
    team = Team(
        name="t",
        planner=Planner(model=model, synthesizer_guardrails=list(answer_guards)),
        workers=[Worker(name="clerk", description="mails", model=model)],
        # the plan, s1, and no s2: it would leave no synthesis
        budget=budget or Budget(model_calls=3),
    )
    async with team.start() as running:
        return await running.run("mail ann")


async def test_a_partial_answer_a_guard_trips_on_is_withheld_saying_which_and_why() -> None:
    result = await partial_run(no_addresses)
    assert result.status == "partial"
    assert result.answer == (
        "Partial result (budget exhausted: model_calls): withheld by guardrail "
        "'no_addresses': it gives an e-mail address; the committed steps' outputs are "
        "in RunResult.steps"
    )
    assert "@" in result.steps[0].output
    (trip,) = [e for e in result.events if isinstance(e, GuardrailTripped)]
    assert (trip.guardrail, trip.subject, trip.role) == ("no_addresses", "answer", "synthesizer")


async def test_a_partial_answer_the_guards_pass_is_released() -> None:
    def short(answer: AnswerSubject) -> Outcome:
        return Pass() if len(answer.text) < 10_000 else Trip("too long")

    result = await partial_run(short)
    assert result.status == "partial"
    assert result.answer.startswith(HEAD)
    assert "ann@example.com" in result.answer


async def test_a_partial_answer_is_released_as_the_guards_rewrote_it() -> None:
    result = await partial_run(mask, no_addresses)  # the rewrite feeds the next guard
    assert result.status == "partial"
    assert result.answer.startswith(HEAD)
    assert "ann at example.com" in result.answer
    assert "@" not in result.answer
    rewrote = [e for e in result.events if isinstance(e, GuardrailRewrote)]
    assert [(e.guardrail, e.subject) for e in rewrote] == [("mask", "answer")]


async def test_a_judge_call_on_a_partial_answer_is_refused_not_overspent() -> None:
    asked: list[ModelRequest] = []

    async def llm_judge(answer: AnswerSubject) -> Outcome:
        def verdict(request: ModelRequest) -> str:
            asked.append(request)
            return "fine"

        await judge(ScriptedModel(verdict), ModelRequest(system="judge", messages=()))
        return Pass()

    result = await partial_run(llm_judge)
    assert asked == []
    assert result.model_calls == 2  # one was left, and still the judge was not asked
    assert result.answer.startswith(
        "Partial result (budget exhausted: model_calls): withheld by guardrail 'llm_judge': "
        "the guardrail's judge call was not made: the run's budget ran out"
    )


async def test_a_partial_answer_guard_that_never_ends_is_bounded_by_the_wall_clock() -> None:
    async def stuck(answer: AnswerSubject) -> Outcome:
        await anyio.sleep_forever()
        return Pass()

    result = await partial_run(stuck, budget=Budget(model_calls=3, wall_clock=5))
    assert result.status == "partial"
    assert result.answer.startswith(
        "Partial result (budget exhausted: model_calls): withheld by guardrail 'stuck': "
        "it did not judge it within 0.5 s"
    )


async def test_a_partial_answer_without_answer_guards_gives_the_outputs() -> None:
    result = await partial_run()
    assert result.status == "partial"
    assert result.answer.startswith(HEAD)
    assert "ann@example.com" in result.answer


async def test_a_wall_clock_spent_judging_the_synthesized_answer_judges_the_partial_one() -> None:
    judged: list[str] = []

    async def slow_on_answers(answer: AnswerSubject) -> Outcome:
        judged.append(answer.text)
        if not answer.text.startswith("Partial result"):
            await anyio.sleep_forever()  # the synthesized answer: the wall clock runs out
        return no_addresses(answer)

    # two seconds: room for the plan and s1 on a loaded machine
    result = await partial_run(slow_on_answers, budget=Budget(wall_clock=2))
    assert result.status == "partial"
    assert result.budget_exhausted == "wall_clock"
    assert len(judged) == 2
    assert result.answer == (
        "Partial result (budget exhausted: wall_clock): withheld by guardrail "
        "'slow_on_answers': it gives an e-mail address; the committed steps' outputs are "
        "in RunResult.steps"
    )
