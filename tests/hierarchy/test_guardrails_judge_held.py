"""A guard's judge call (``judge``) is held by the budget's reply cap as every other
call of the run is: its ``max_tokens`` is no more than the output tokens the run (or,
inside a step, the step's share) has left, so a judge cannot spend past the budget."""

from __future__ import annotations

import json

import pytest

from regiment.hierarchy import Budget, Planner, PlanSubject, RequestSubject, Team, Worker
from regiment.hierarchy.guard import Outcome, Pass, ReplySubject, judge
from regiment.models import (
    Message,
    ModelRequest,
    ModelResponse,
    ScriptedModel,
    TextPart,
    Usage,
)

pytestmark = pytest.mark.anyio

PLAN = json.dumps({"steps": [{"id": "s1", "description": "look"}]})


def said(text: str, output_tokens: int) -> ModelResponse:
    usage = Usage(input_tokens=10, output_tokens=output_tokens)
    return ModelResponse(
        parts=(TextPart(text=text),), stop_reason="end_turn", usage=usage, model="m"
    )


class Held:
    """The ``max_tokens`` each call was sent with, by who made it."""

    def __init__(self) -> None:
        self.worker: list[int] = []
        self.judge: list[int] = []

    def brain(self, request: ModelRequest) -> ModelResponse:
        if request.role == "planner":
            return said(PLAN, 40)
        if request.role == "worker":
            self.worker.append(request.max_tokens)
            return said("looked", 25)
        return said("answer", 5)

    def judged(self, request: ModelRequest) -> ModelResponse:
        self.judge.append(request.max_tokens)
        return said("ok", 3)

    async def verdict(self) -> Outcome:
        request = ModelRequest(messages=(Message.user("judge"),))
        await judge(ScriptedModel(self.judged), request)
        return Pass()


async def test_a_plan_judges_reply_is_held_to_the_output_tokens_the_run_has_left() -> None:
    held = Held()

    async def plan_judge(subject: PlanSubject) -> Outcome:
        return await held.verdict()

    model = ScriptedModel(held.brain)
    team = Team(
        name="held",
        planner=Planner(model=model, guardrails=[plan_judge]),
        workers=[Worker(name="w", description="looks", model=model)],
        budget=Budget(output_tokens=300),
    )
    async with team.start() as running:
        result = await running.run("look")
    assert result.status == "completed"
    assert held.judge == [300 - 40]  # what the plan's reply left of the run's 300


async def test_a_judge_without_an_output_budget_is_not_held() -> None:
    held = Held()

    async def plan_judge(subject: PlanSubject) -> Outcome:
        return await held.verdict()

    model = ScriptedModel(held.brain)
    team = Team(
        name="free",
        planner=Planner(model=model, guardrails=[plan_judge]),
        workers=[Worker(name="w", description="looks", model=model)],
    )
    async with team.start() as running:
        assert (await running.run("look")).status == "completed"
    assert held.judge == [ModelRequest(messages=()).max_tokens]


async def test_a_steps_judge_is_held_to_the_steps_share_as_the_steps_own_call_is() -> None:
    held = Held()

    async def request_judge(subject: RequestSubject) -> Outcome:
        return await held.verdict()

    model = ScriptedModel(held.brain)
    worker = Worker(name="w", description="looks", model=model, guardrails=[request_judge])
    team = Team(
        name="held",
        planner=Planner(model=model),
        workers=[worker],
        budget=Budget(output_tokens=300),
    )
    async with team.start() as running:
        assert (await running.run("look")).status == "completed"
    (own,) = held.worker
    (judged,) = held.judge
    assert own == 300 - 40  # the step's share: what the plan's reply left
    assert judged == own  # the judge runs first: the share has as much left for it


async def test_a_reply_judge_is_held_to_what_the_share_has_left_after_that_reply() -> None:
    held = Held()

    async def reply_judge(subject: ReplySubject) -> Outcome:
        return await held.verdict()

    model = ScriptedModel(held.brain)
    worker = Worker(name="w", description="looks", model=model, guardrails=[reply_judge])
    team = Team(
        name="held",
        planner=Planner(model=model),
        workers=[worker],
        budget=Budget(output_tokens=300),
    )
    async with team.start() as running:
        assert (await running.run("look")).status == "completed"
    # the step's reply spent 25 of its 260, not charged yet when its judge asks
    assert held.judge == [300 - 40 - 25]


async def test_a_planner_reply_judge_is_held_to_what_the_run_has_left_after_that_reply() -> None:
    held = Held()

    async def reply_judge(subject: ReplySubject) -> Outcome:
        return await held.verdict()

    model = ScriptedModel(held.brain)
    team = Team(
        name="held",
        planner=Planner(model=model, guardrails=[reply_judge]),
        workers=[Worker(name="w", description="looks", model=model)],
        budget=Budget(output_tokens=300),
    )
    async with team.start() as running:
        assert (await running.run("look")).status == "completed"
    # the plan's reply (40) is judged before it is charged: the judge has 260, not 300
    assert held.judge == [300 - 40]
