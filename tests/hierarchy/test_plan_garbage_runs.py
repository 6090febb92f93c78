"""Property tests: a run whose model replies with generated garbage (as plan,
replan and worker replies) ends in ``PlanError`` after the bounded re-prompts,
or as a valid run; never any other exception, and its events never name a
plan version that was not announced."""

from __future__ import annotations

import anyio
import msgspec
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from regiment.hierarchy import (
    Budget,
    Check,
    Event,
    Planner,
    RunCompleted,
    RunFailed,
    StepReport,
    Team,
    Worker,
)
from regiment.models import ModelRequest, ModelResponse, ScriptedModel, ToolResultPart

from .brains import Brain, plan_json
from .test_plan_garbage import GARBAGE
from .versions import announced_violations

_ATTEMPTS = 3


def _never(report: StepReport) -> bool:
    return False


async def _run(plans: list[str], worker_text: str, *, replan: bool) -> list[Event]:
    async def work(
        description: str, results: list[ToolResultPart], request: ModelRequest
    ) -> ModelResponse | str:
        return worker_text or "ok"

    brain = Brain(plans, work=work, synthesis=worker_text or "answer")
    model = ScriptedModel(brain)
    team = Team(
        name="t",
        planner=Planner(model=model, max_plan_attempts=_ATTEMPTS),
        workers=[Worker(name="w", description="does things", model=model)],
        checks={"never": Check(description="never passes", predicate=_never)} if replan else {},
    )
    events: list[Event] = []
    async with team.start() as running, running.stream("goal") as stream:
        async for event in stream:
            events.append(event)
    return events


def _assert_story(events: list[Event], *, replans: bool = False) -> None:
    last = events[-1]
    assert isinstance(last, RunCompleted | RunFailed)
    if isinstance(last, RunFailed) and replans and last.error_type == "StepFailed":
        # a garbage replan that reads as prose is a plan: its step may fail and replan
        # again, until Budget.replans is spent
        assert "no replans left" in last.message, last.message
    elif isinstance(last, RunFailed):
        assert last.error_type == "PlanError", last.message
    else:
        assert last.result.status == "completed"
        msgspec.json.encode(last.result)  # everything in it can be written out
    assert announced_violations(events) == []


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    replies=st.lists(GARBAGE, min_size=_ATTEMPTS, max_size=_ATTEMPTS),
    worker_text=GARBAGE,
)
@example(replies=["", "", "0"], worker_text=" ")  # a prose plan whose step fails: replans
def test_a_garbage_planner_ends_in_plan_error_or_a_valid_run(
    backend: str, replies: list[str], worker_text: str
) -> None:
    """Garbage that reads as a plan may give a step that fails (a blank worker reply);
    its replans get the same replies again, as many as Budget.replans can ask for."""
    plans = replies * (1 + Budget().replans)
    events = anyio.run(lambda: _run(plans, worker_text, replan=False), backend=backend)
    _assert_story(events, replans=True)


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    replies=st.lists(GARBAGE, min_size=_ATTEMPTS, max_size=_ATTEMPTS),
    worker_text=GARBAGE,
)
@example(replies=["", "", "0"], worker_text=" ")  # a prose replan whose step fails again
def test_garbage_replans_end_in_plan_error_or_a_valid_run(
    backend: str, replies: list[str], worker_text: str
) -> None:
    """The first plan is good but its first step fails its check; every replan reply is
    garbage: the same replies again for each replan, as many as Budget.replans can ask for."""
    first = plan_json({"description": "probe", "check": "never"}, {"description": "other"})
    plans = [first, *replies * Budget().replans]
    events = anyio.run(lambda: _run(plans, worker_text, replan=True), backend=backend)
    _assert_story(events, replans=True)
