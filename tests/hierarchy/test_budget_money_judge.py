"""A guard's judge calls under a money limit (``Budget.usd``). A judge whose model has no
price cost $0 there, silently: now a guard that names its model (``Guardrail.model``) is
checked at ``Team(...)`` as every other model is, and a judge call to a model with no
price is named in a WARNING, once per run for each guard and model. A priced judge's
reply is held to the money left, as every other call's is."""

from __future__ import annotations

import json
import logging

import pytest

from regiment.errors import ConfigError
from regiment.hierarchy import Budget, Planner, PlanSubject, Team, Worker
from regiment.hierarchy.guard import Guardrail, Outcome, Pass, ReplySubject, guardrail, judge
from regiment.models import (
    Message,
    ModelRequest,
    ModelResponse,
    Price,
    ScriptedModel,
    TextPart,
    Usage,
)

pytestmark = pytest.mark.anyio

WHOLE = Price(input=1.0, output=2.0)  # whole micro-dollars a token: input + 2 x output
PLAN = json.dumps({"steps": [{"id": "s1", "description": "a"}, {"id": "s2", "description": "b"}]})


def _said(text: str, output_tokens: int) -> ModelResponse:
    usage = Usage(input_tokens=10, output_tokens=output_tokens)
    return ModelResponse(
        parts=(TextPart(text=text),), stop_reason="end_turn", usage=usage, model="m"
    )


def _brain(request: ModelRequest) -> ModelResponse:
    if request.role == "planner":
        return _said(PLAN, 40)
    return _said("done", 5)


class Judged:
    """A judge model and the ``max_tokens`` of each call to it."""

    def __init__(self, price: Price | None, name: str = "judge-model") -> None:
        self.asked: list[int] = []
        self.model = ScriptedModel(self._reply, name=name, price=price)

    def _reply(self, request: ModelRequest) -> ModelResponse:
        self.asked.append(request.max_tokens)
        return _said("ok", 3)

    async def verdict(self) -> Outcome:
        await judge(self.model, ModelRequest(messages=(Message.user("judge"),)))
        return Pass()


def _team(judged: Judged, budget: Budget, named: bool = False) -> Team:
    model = ScriptedModel(_brain, price=WHOLE)

    @guardrail("plan", model=judged.model if named else None)
    async def plan_judge(subject: PlanSubject) -> Outcome:
        return await judged.verdict()

    async def reply_judge(subject: ReplySubject) -> Outcome:
        return await judged.verdict()

    worker = Worker(name="w", description="works", model=model, guardrails=[reply_judge])
    return Team(
        name="judged",
        planner=Planner(model=model, guardrails=[plan_judge]),
        workers=[worker],
        budget=budget,
    )


def test_a_guard_naming_an_unpriced_model_is_refused_at_team_start() -> None:
    with pytest.raises(ConfigError, match=r"guardrail 'plan_judge' \(its judge\)'s model "):
        _team(Judged(None), Budget(usd=1.0), named=True)
    _team(Judged(None), Budget(), named=True)  # no money limit: no price needed
    _team(Judged(WHOLE), Budget(usd=1.0), named=True)
    guard = Guardrail(lambda s: Pass(), "answer", name="g", model=ScriptedModel([], name="x"))
    with pytest.raises(ConfigError, match="guardrail 'g' \\(its judge\\)'s model 'x' has none"):
        Team(
            name="t",
            planner=Planner(model=ScriptedModel([], price=WHOLE)),
            workers=[Worker(name="w", description="d", model=ScriptedModel([], price=WHOLE))],
            guardrails=[guard],
            budget=Budget(usd=1.0),
        )


def test_a_guard_given_something_else_as_its_model_says_so() -> None:
    with pytest.raises(ConfigError, match="model must be the Model its check asks"):
        Guardrail(lambda s: Pass(), "answer", name="g", model="claude")  # type: ignore[arg-type]


async def test_an_unpriced_judge_is_named_in_a_warning_once_per_run(
    caplog: pytest.LogCaptureFixture,
) -> None:
    judged = Judged(None)
    team = _team(judged, Budget(usd=1.0))
    with caplog.at_level(logging.WARNING, logger="regiment"):
        async with team.start() as running:
            first = await running.run("work")
            second = await running.run("work")
    assert (first.status, second.status) == ("completed", "completed")
    assert len(judged.asked) == 2 * 3  # each run: the plan's judge, and each step's reply's
    warned = [r for r in caplog.records if "has no price" in r.getMessage()]
    assert all(r.name == "regiment.guardrail" for r in warned)
    said = sorted(r.getMessage().split(" asks ")[0] for r in warned)
    # once per run for each guard, from the planner's side and from the steps alike
    assert said == ["guardrail 'plan_judge'"] * 2 + ["guardrail 'reply_judge'"] * 2
    assert all("'judge-model'" in r.getMessage() for r in warned)
    assert all("price=Price(" in r.getMessage() for r in warned)


async def test_no_warning_without_a_money_limit_or_with_a_priced_judge(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING, logger="regiment"):
        for judged, budget in ((Judged(None), Budget()), (Judged(WHOLE), Budget(usd=1.0))):
            result = await _team(judged, budget).run("work")
            assert result.status == "completed"
            assert len(judged.asked) == 3
    assert [r for r in caplog.records if "has no price" in r.getMessage()] == []


async def test_a_priced_judges_reply_is_held_to_the_money_left() -> None:
    roomy = Judged(WHOLE)
    assert (await _team(roomy, Budget(usd=1.0)).run("work")).status == "completed"
    assert set(roomy.asked) == {4096}  # a roomy limit leaves them as asked
    tight = Judged(WHOLE)
    result = await _team(tight, Budget(usd=0.002)).run("work")  # 2,000 micro-dollars
    assert len(tight.asked) == 3
    # each reply held to what the money left (of the run, or of the step's share) pays
    # for at 2 micro-dollars an output token: under 1,000 tokens
    assert max(tight.asked) < 1_000
    assert result.usage.micro_usd <= 2_000
