"""A model call that fails saying nothing of its tokens is still a model call.

A provider's error status (here a 500 the SDK does not retry) carries no usage, and
such a call used to count 0 model calls: the run's ``model_calls`` (and so
``regiment show``'s "calls:" line, read from the ``RunFailed``) said fewer calls than
the provider got. Each role's call is counted, its tokens unknown (none charged), over
HTTP with each provider's official SDK against the stand-in server; so is the call of a
model of the application's that raised.
"""

from __future__ import annotations

import pytest

from regiment.errors import ModelAPIError, ModelError, RunError
from regiment.hierarchy import Budget, Critic, Planner, PlanSubject, Team, Worker
from regiment.hierarchy.guard import Outcome, Pass, ReplySubject, judge
from regiment.models import Message, Model, ModelRequest, ModelResponse, ScriptedModel, Usage

from ..models.standin import StandIn
from ..models.wires import Wire
from .brains import Brain, plan_json

pytestmark = pytest.mark.anyio

ONE_STEP = plan_json({"description": "look it up"})


def _team(brain: Brain, failing: Model, role: str) -> Team:
    scripted = ScriptedModel(brain)
    return Team(
        name="desk",
        planner=Planner(
            model=failing if role == "planner" else scripted,
            synthesizer_model=failing if role == "synthesizer" else None,
        ),
        workers=[
            Worker(
                name="research",
                description="Looks things up.",
                model=failing if role == "worker" else scripted,
            )
        ],
        critic=Critic(model=failing) if role == "critic" else None,
        budget=Budget(replans=0),
    )


# The calls the run made, the failed one among them: plan; plan, step; plan, step, critic; ...
CALLS = {"planner": 1, "worker": 2, "critic": 3, "synthesizer": 3}


@pytest.mark.parametrize("role", list(CALLS))
async def test_a_call_that_failed_with_no_usage_is_counted(
    wire: Wire, api: StandIn, role: str
) -> None:
    brain = Brain([ONE_STEP])
    model = wire.make(api, True, 0)  # every request gets the 500 that is not retried
    async with model:
        with pytest.raises(RunError) as caught:
            await _team(brain, model, role).run("Look it up")
    assert len(api.requests) == 1  # the one failed call reached the provider
    failed = caught.value.failed
    assert failed is not None
    assert failed.model_calls == CALLS[role]
    if role == "planner":  # its tokens are unknown: none charged
        assert failed.usage == Usage()
    if role == "worker":
        (report,) = failed.steps
        assert (report.status, report.model_calls, report.usage) == ("failed", 1, Usage())


class Broken:
    """A model of the application's whose call raises."""

    name, provider = "broken", "local"

    async def complete(self, request: ModelRequest) -> ModelResponse:
        raise RuntimeError("the socket closed")


@pytest.mark.parametrize("role", ["planner", "worker"])
async def test_a_call_of_a_model_of_ones_own_that_raised_is_counted(role: str) -> None:
    with pytest.raises(RunError) as caught:
        await _team(Brain([ONE_STEP]), Broken(), role).run("Look it up")
    failed = caught.value.failed
    assert failed is not None
    assert failed.model_calls == CALLS[role]


def _overloaded(request: ModelRequest) -> ModelResponse:
    raise ModelAPIError("the judge's API answered 529 overloaded_error", status_code=529)


async def _lenient(subject: object) -> Outcome:
    """A guard whose judge call fails, and which lets the subject through then."""
    try:
        await judge(ScriptedModel(_overloaded), ModelRequest(messages=(Message.user("ok?"),)))
    except ModelError:
        return Pass()
    raise AssertionError("the judge's model answered")


@pytest.mark.parametrize("on", ["plan", "step"])
async def test_a_judge_call_that_failed_with_no_usage_is_counted(on: str) -> None:
    async def plan_guard(subject: PlanSubject) -> Outcome:
        return await _lenient(subject)

    async def step_guard(subject: ReplySubject) -> Outcome:
        return await _lenient(subject)

    model = ScriptedModel(Brain([ONE_STEP]))
    worker = Worker(
        name="w", description="works", model=model, guardrails=[step_guard] if on == "step" else []
    )
    planner = Planner(model=model, guardrails=[plan_guard] if on == "plan" else [])
    result = await Team(name="t", planner=planner, workers=[worker]).run("go")
    assert result.status == "completed"
    assert result.model_calls == 4  # plan, its judge or the step's, the step, synthesis
