"""A run that ends ``partial`` (its budget spent before the synthesis) answers with its
committed outputs verbatim; with answer guards on the team nothing was synthesized for
them to judge, so that answer is withheld instead of going out unjudged."""

from __future__ import annotations

import pytest

from regiment.hierarchy import Budget, Planner, RunResult, Team, Worker
from regiment.hierarchy.guard import AnswerSubject, GuardLike, Outcome, Pass, Trip
from regiment.models import ScriptedModel

from .brains import Brain, plan_json

pytestmark = pytest.mark.anyio

PLAN = plan_json(
    {"description": "mail ann@example.com"}, {"description": "file it", "depends_on": ["s1"]}
)


def no_addresses(answer: AnswerSubject) -> Outcome:
    return Trip("it gives an e-mail address") if "@" in answer.text else Pass()


async def partial_run(*answer_guards: GuardLike) -> RunResult:
    model = ScriptedModel(Brain([PLAN]))  # the worker echoes its step: "did: mail ann@..."
    team = Team(
        name="t",
        planner=Planner(model=model, synthesizer_guardrails=list(answer_guards)),
        workers=[Worker(name="clerk", description="mails", model=model)],
        budget=Budget(model_calls=3),  # the plan, s1, and no s2: it would leave no synthesis
    )
    async with team.start() as running:
        return await running.run("mail ann")


async def test_a_partial_answer_with_answer_guards_is_withheld() -> None:
    result = await partial_run(no_addresses)
    assert result.status == "partial"
    assert result.answer == (
        "Partial result (budget exhausted: model_calls): withheld, as the team's answer "
        "guardrails could not judge it (no answer was synthesized); the committed steps' "
        "outputs are in RunResult.steps"
    )
    assert "@" in result.steps[0].output


async def test_a_partial_answer_without_answer_guards_gives_the_outputs() -> None:
    result = await partial_run()
    assert result.status == "partial"
    assert result.answer.startswith("Partial result (budget exhausted: model_calls).\ns1: ")
    assert "ann@example.com" in result.answer
