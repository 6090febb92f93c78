"""A plan guard that fails (raises, returns no outcome, rewrites the plan into something
that is not one) ends the run with a ``GuardrailError`` that names the guard and blames
it, at once: the planner's model is not asked again to mend a bug in the guard (it was,
and the ``PlanError`` then advised "a model or prompt that plans better")."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from regiment.errors import GuardrailError
from regiment.hierarchy import Planner, PlanSubject, Rewrite, Team, Trip, Worker
from regiment.hierarchy.guard import Outcome
from regiment.models import ScriptedModel

from .brains import Brain, plan_json

pytestmark = pytest.mark.anyio


def raises(subject: PlanSubject) -> Outcome:
    raise KeyError("no such policy")


def returns_none(subject: PlanSubject) -> Outcome:
    return None  # type: ignore[return-value]


def trips_with_no_text(subject: PlanSubject) -> Outcome:
    return Trip(3)  # type: ignore[arg-type]


def rewrites_wrong(subject: PlanSubject) -> Outcome:
    return Rewrite("not a plan")


@pytest.mark.parametrize(
    ("guard", "fault"),
    [
        (raises, "it raised KeyError: 'no such policy'"),
        (returns_none, "it returned NoneType, not Pass, Rewrite or Trip"),
        (rewrites_wrong, "it rewrote a PlanSubject into a str"),
        # this crashed the planner: TypeError: object of type 'int' has no len()
        (trips_with_no_text, "it returned Trip(3), whose reason is not text (a str)"),
    ],
)
async def test_a_plan_guard_that_fails_ends_the_run_naming_the_guard(
    guard: Callable[[PlanSubject], Outcome], fault: str
) -> None:
    brain = Brain([plan_json({"description": "refund order 7"})] * 3)
    model = ScriptedModel(brain)
    team = Team(
        name="t",
        planner=Planner(model=model, max_plan_attempts=3),
        workers=[Worker(name="billing", description="refunds", model=model)],
        guardrails=[guard],
    )
    async with team.start() as running:
        with pytest.raises(GuardrailError) as info:
            await running.run("refund order 7")
    message = str(info.value)
    assert message.startswith(f"guardrail '{guard.__name__}' failed on the plan: {fault}"), message
    assert message.endswith(f"fix guardrail '{guard.__name__}'")
    assert "plans better" not in message
    assert (info.value.guardrail, info.value.subject) == (guard.__name__, "plan")
    assert len(brain.plan_requests) == 1  # not sent back to the planner's model
