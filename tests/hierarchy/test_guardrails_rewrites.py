"""A guard's ``Rewrite`` that the run cannot use (a value of the wrong type, or a
subject moved to another tool) trips with a reason that says what the guard did,
at every kind of subject; a list where a tuple goes is taken as one."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from regiment.errors import GuardrailError
from regiment.hierarchy import Budget, Planner, RunResult, Team, Worker
from regiment.hierarchy.guard import (
    AnswerSubject,
    GuardLike,
    Outcome,
    PlanSubject,
    ReplySubject,
    RequestSubject,
    Rewrite,
    ToolCallSubject,
    ToolResultSubject,
)
from regiment.models import ScriptedModel

from .brains import Brain, plan_json
from .test_guardrails_steps import Till, brain, failed_step, make_team, run, trips

pytestmark = pytest.mark.anyio


def rewriting(kind: type[Any], **fields: object) -> GuardLike:
    """A guard over ``kind`` that rewrites ``fields`` of every subject."""

    def rewrite(subject: Any) -> Outcome:
        return Rewrite(dataclasses.replace(subject, **fields))

    rewrite.__annotations__["subject"] = kind
    return rewrite


STEP_REWRITES = [
    (
        rewriting(ToolCallSubject, tool="lookup"),
        "tool_call",
        "rewrote the ToolCallSubject's tool ('issue_refund' into 'lookup'); a rewrite may "
        "change only what the subject carries, not what it is: trip instead",
    ),
    (
        rewriting(ToolCallSubject, arguments=None),
        "tool_call",
        "rewrote the ToolCallSubject's arguments into the NoneType None, "
        "not a mapping of names to JSON values",
    ),
    (
        rewriting(ToolResultSubject, content={1, 2}),
        "tool_result",
        "rewrote the ToolResultSubject's content into the set {1, 2}, not a JSON value "
        "(Object of type set is not JSON serializable)",
    ),
    (
        rewriting(RequestSubject, messages=("hello",)),
        "model_request",
        "rewrote the RequestSubject's messages into a tuple holding the str 'hello', "
        "not a tuple of Message",
    ),
    (
        rewriting(ReplySubject, response="hello"),
        "model_reply",
        "rewrote the ReplySubject's response into the str 'hello', not a ModelResponse",
    ),
]


@pytest.mark.parametrize(
    ("guard", "kind", "reason"),
    STEP_REWRITES,
    ids=["tool", "arguments", "content", "messages", "response"],
)
async def test_a_step_guards_unusable_rewrite_trips_and_no_tool_runs(
    guard: GuardLike, kind: str, reason: str
) -> None:
    till = Till()
    outcome, seen = await run(make_team(till, brain(), worker_guards=[guard]))
    message = failed_step(outcome)
    assert f"guardrail 'rewrite' tripped on the {kind.replace('_', ' ')}: {reason}" in message
    (trip,) = trips(seen)
    assert (trip.subject, trip.reason) == (kind, reason)
    if kind != "tool_result":  # a result is judged after its tool ran
        assert till.refunds == []


def team(model: ScriptedModel, guards: list[GuardLike], answer: list[GuardLike]) -> Team:
    return Team(
        name="t",
        planner=Planner(model=model, max_plan_attempts=1, synthesizer_guardrails=answer),
        workers=[Worker(name="billing", description="refunds", model=model)],
        budget=Budget(replans=0),
        guardrails=guards,
    )


async def test_an_answer_rewritten_into_no_text_fails_the_run_with_the_reason() -> None:
    model = ScriptedModel(Brain([plan_json({"description": "refund order 7"})]))
    async with team(model, [], [rewriting(AnswerSubject, text=None)]).start() as running:
        with pytest.raises(GuardrailError) as raised:
            await running.run("refund order 7")
    assert raised.value.reason == (
        "rewrote the AnswerSubject's text into the NoneType None, not a str"
    )


async def test_a_plan_rewritten_into_no_steps_fails_the_run_naming_the_guard() -> None:
    # A bug in the guard: the planner's model is not asked to mend it (it was, in vain).
    model = ScriptedModel(Brain([plan_json({"description": "refund order 7"})]))
    async with team(model, [rewriting(PlanSubject, steps=None)], []).start() as running:
        with pytest.raises(GuardrailError, match="guardrail 'rewrite' failed on the plan: it "):
            await running.run("refund order 7")


async def test_a_plan_rewritten_as_a_list_of_steps_runs() -> None:
    def as_list(subject: PlanSubject) -> Outcome:
        steps: Any = list(subject.steps)  # not the annotated tuple: taken as one
        return Rewrite(dataclasses.replace(subject, steps=steps))

    model = ScriptedModel(Brain([plan_json({"description": "refund order 7"})]))
    async with team(model, [as_list], []).start() as running:
        result = await running.run("refund order 7")
    assert isinstance(result, RunResult)
    assert result.status == "completed"
    assert isinstance(result.plans[-1].steps, tuple)
