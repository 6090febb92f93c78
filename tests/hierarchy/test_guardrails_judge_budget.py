"""A guard's judge call (``judge``) is refused up front when the run's budget, or
the step's share of it, has nothing left: the guard trips with the reason and the
judge's model is never called. A judge call the model refuses is charged all the same."""

from __future__ import annotations

import dataclasses

import pytest

from regiment.hierarchy import (
    Budget,
    Event,
    GuardrailTripped,
    Planner,
    PlanSubject,
    RunCompleted,
    RunFailed,
    Team,
    Worker,
)
from regiment.hierarchy.guard import Outcome, Pass, ReplySubject, Trip, judge
from regiment.models import (
    Message,
    ModelRequest,
    ModelResponse,
    ScriptedModel,
    TextPart,
    Usage,
    text_response,
)

from .brains import Brain, plan_json

pytestmark = pytest.mark.anyio


@dataclasses.dataclass
class Judge:
    """An LLM-as-judge whose model counts its calls."""

    asked: int = 0
    prompt: str = "judge"
    refuses: bool = False

    def reply(self, request: ModelRequest) -> ModelResponse:
        self.asked += 1
        if self.refuses:  # a refusal is billed: 900 tokens in, 9 out
            usage = Usage(input_tokens=900, output_tokens=9)
            parts = (TextPart(text="I can't judge that"),)
            return ModelResponse(parts=parts, stop_reason="refusal", usage=usage, model="j")
        return text_response("ok")

    async def verdict(self) -> Outcome:
        request = ModelRequest(messages=(Message.user(self.prompt),))
        reply = await judge(ScriptedModel(self.reply), request)
        return Pass() if reply.text == "ok" else Trip(reply.text)


async def run(judge_: Judge, budget: Budget, *, on: str) -> list[Event]:
    async def plan_judge(subject: PlanSubject) -> Outcome:
        return await judge_.verdict()

    async def reply_judge(subject: ReplySubject) -> Outcome:
        return await judge_.verdict()

    model = ScriptedModel(Brain([plan_json({"description": "one"})]))
    worker = Worker(
        name="billing",
        description="refunds",
        model=model,
        guardrails=[reply_judge] if on == "step" else [],
    )
    planner = Planner(model=model, guardrails=[plan_judge] if on == "plan" else [])
    team = Team(name="t", planner=planner, workers=[worker], budget=budget)
    async with team.start() as running, running.stream("refund order 7") as events:
        return [event async for event in events]


def trip(seen: list[Event]) -> GuardrailTripped:
    (tripped,) = [e for e in seen if isinstance(e, GuardrailTripped)]
    return tripped


async def test_a_plan_judge_with_no_model_call_left_in_the_run_trips_uncalled() -> None:
    judge_ = Judge()
    seen = await run(judge_, Budget(model_calls=1), on="plan")  # the plan call took it
    assert judge_.asked == 0
    tripped = trip(seen)
    assert (tripped.guardrail, tripped.subject) == ("plan_judge", "plan")
    assert tripped.reason.startswith(
        "the guardrail's judge call was not made: the run's model_calls budget has none left"
    )
    last = seen[-1]
    assert isinstance(last, RunCompleted)
    assert last.result.status == "partial"
    assert last.result.model_calls == 1


async def test_a_plan_judge_whose_request_does_not_fit_the_tokens_left_trips_uncalled() -> None:
    judge_ = Judge(prompt="x" * 4000)  # far more than the tokens the plan call leaves
    seen = await run(judge_, Budget(tokens=300), on="plan")
    assert judge_.asked == 0
    assert "the run's tokens budget has none left" in trip(seen).reason


async def test_a_step_judge_with_the_steps_share_spent_trips_uncalled() -> None:
    judge_ = Judge()
    # the plan call, then one call each for the step and the synthesis
    seen = await run(judge_, Budget(model_calls=3, replans=0), on="step")
    assert judge_.asked == 0
    tripped = trip(seen)
    assert (tripped.subject, tripped.worker, tripped.step_id) == ("model_reply", "billing", "s1")
    assert tripped.reason.startswith(
        "the guardrail's judge call was not made: the step's model call allowance of 1 is used up"
    )
    assert isinstance(seen[-1], RunFailed)


async def test_a_judge_with_budget_left_is_called() -> None:
    plan, step = Judge(), Judge()
    seen = await run(plan, Budget(model_calls=4), on="plan")
    assert plan.asked == 1
    assert isinstance(seen[-1], RunCompleted)
    seen = await run(step, Budget(model_calls=4), on="step")
    assert step.asked == 1
    last = seen[-1]
    assert isinstance(last, RunCompleted)
    assert last.result.status == "completed"


async def test_a_plan_judge_in_run_is_held_to_the_runs_budget_as_in_stream() -> None:
    """``run()``'s planner has no task of its own: the plan guards' task it starts must
    still see the run's budget (a context variable set around the start)."""
    judge_ = Judge()

    async def plan_judge(subject: PlanSubject) -> Outcome:
        return await judge_.verdict()

    model = ScriptedModel(Brain([plan_json({"description": "one"})]))
    worker = Worker(name="billing", description="refunds", model=model)
    planner = Planner(model=model, guardrails=[plan_judge])
    team = Team(name="t", planner=planner, workers=[worker], budget=Budget(model_calls=1))
    result = await team.run("refund order 7")
    assert judge_.asked == 0
    assert [type(e).__name__ for e in result.events] == [
        "RunStarted",
        "GuardrailTripped",
        "BudgetExhausted",
    ]
    assert trip(list(result.events)).reason.startswith(
        "the guardrail's judge call was not made: the run's model_calls budget has none left"
    )


@pytest.mark.parametrize("on", ["plan", "step"])
async def test_a_refused_judge_call_is_charged(on: str) -> None:
    judge_ = Judge(refuses=True)
    seen = await run(judge_, Budget(replans=0, model_calls=10), on=on)
    assert judge_.asked >= 1
    assert {e.reason for e in seen if isinstance(e, GuardrailTripped)} == {"ModelRefused"}
    last = seen[-1]
    assert isinstance(last, RunFailed)
    assert last.model_calls >= 1 + judge_.asked
    assert last.usage.input_tokens >= 900 * judge_.asked
    if on == "step":
        (step,) = [r for r in last.steps if r.step_id == "s1"]
        assert step.model_calls == 1 + judge_.asked
        assert step.usage.input_tokens >= 900
