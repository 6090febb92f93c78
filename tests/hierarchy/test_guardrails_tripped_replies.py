"""A reply a ``model_reply`` guard trips on was billed by the provider all the same:
the step's (a worker's reply, ``fail_step``) or the run's (a planner-side reply) usage,
model calls and budget count it, as they do one a ``tell_model`` guard sends back."""

from __future__ import annotations

import pytest

from regiment.hierarchy import Budget, Event, Planner, ReplySubject, RunFailed, Team, Worker
from regiment.hierarchy.guard import Outcome, Trip
from regiment.models import ModelRequest, ModelResponse, ScriptedModel, TextPart, Usage

from .brains import plan_json

pytestmark = pytest.mark.anyio

_PLAN = plan_json({"description": "refund order 7", "worker": "billing"})


def _priced(request: ModelRequest) -> ModelResponse:
    """Every reply costs 700 tokens in and 7 out; the planner's is a plan."""
    text = _PLAN if request.role == "planner" else "refunded"
    usage = Usage(input_tokens=700, output_tokens=7)
    return ModelResponse(
        parts=(TextPart(text=text),), stop_reason="end_turn", usage=usage, model="m"
    )


def no(subject: ReplySubject) -> Outcome:
    return Trip("not good enough")


async def _run(*, worker_guards: bool) -> list[Event]:
    model = ScriptedModel(_priced)
    worker = Worker(
        name="billing",
        description="refunds",
        model=model,
        guardrails=[no] if worker_guards else [],
    )
    planner = Planner(model=model, guardrails=[] if worker_guards else [no])
    team = Team(name="t", planner=planner, workers=[worker], budget=Budget(replans=0))
    async with team.start() as running, running.stream("refund order 7") as events:
        return [event async for event in events]


async def test_a_worker_reply_a_fail_step_guard_trips_on_is_charged() -> None:
    last = (await _run(worker_guards=True))[-1]
    assert isinstance(last, RunFailed)
    (step,) = last.steps
    assert step.status == "failed"
    assert step.model_calls == 1
    assert step.usage == Usage(input_tokens=700, output_tokens=7)
    assert last.model_calls == 2  # the plan, the step's reply
    assert last.usage.input_tokens == 1400


async def test_a_planner_reply_a_guard_trips_on_is_charged() -> None:
    last = (await _run(worker_guards=False))[-1]
    assert isinstance(last, RunFailed)
    assert last.model_calls == 1
    assert last.usage == Usage(input_tokens=700, output_tokens=7)
