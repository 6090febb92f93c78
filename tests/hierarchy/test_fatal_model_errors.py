"""A worker whose model refuses every call alike fails its run at once.

A bad key (401), no permission (403), an unknown model (404) or a request the API
rejects as invalid (400: a setting the model does not take) come back the same for
every step the worker is given, so a replan would only call the planner again and
send a step to the same model. The run ends at the first such failure with the
provider's message, its sibling steps cancelled; a failure that a replan may help
(a request only too long for the model, a rate limit) is still replanned. Each
provider speaks its own wire format on the HTTP stand-in.
"""

from __future__ import annotations

import pytest

from regiment.errors import ModelAPIError, StepFailed
from regiment.hierarchy import Budget, Planner, Team, TeamWorker, Worker
from regiment.hierarchy.events import Event, Replanned, RunFailed, StepCompleted, StepErrored
from regiment.models import ModelRequest, ScriptedModel

from ..models.standin import StandIn
from ..models.wires import Wire
from .brains import Brain, Hang, plan_json

pytestmark = pytest.mark.anyio

TWO_STEPS = plan_json(
    {"description": "look it up", "worker": "research"},
    {"description": "draft it", "worker": "writer"},
)


def _team(brain: Brain, research: Worker, budget: Budget | None = None) -> Team:
    writer = Worker(name="writer", description="Writes.", model=ScriptedModel(brain))
    return Team(
        name="desk",
        planner=Planner(model=ScriptedModel(brain)),
        workers=[research, writer],
        budget=budget or Budget(),
    )


async def _events(team: Team, goal: str) -> list[Event]:
    async with team.start() as running, running.stream(goal) as events:
        return [event async for event in events]


@pytest.mark.parametrize(
    ("status", "kind", "text", "advice"),
    [
        (401, "authentication_error", "invalid x-api-key", "check the API key"),
        (403, "permission_error", "this key may not use claude-test-1", "permission"),
        (404, "not_found_error", "model: claude-typo", "check the model name"),
        (400, "invalid_request_error", "top_k: Extra inputs are not permitted", "fix the request"),
    ],
)
async def test_a_model_error_no_replan_can_fix_fails_the_run_at_once(
    wire: Wire, api: StandIn, status: int, kind: str, text: str, advice: str
) -> None:
    api.queue(wire.error(status, kind, text))
    hang = Hang()  # the writer's step never ends by itself: the run must cancel it
    brain = Brain([TWO_STEPS], work=hang)
    model = wire.make(api, True, 2)
    research = Worker(name="research", description="Looks things up.", model=model)
    async with model:
        events = await _events(_team(brain, research), "Look up and draft")
    failed = events[-1]
    assert isinstance(failed, RunFailed)
    assert failed.error_type == "StepFailed"
    assert text in failed.message
    assert advice in failed.message
    assert "the run ends without a replan: worker 'research'" in failed.message
    assert len(brain.plan_requests) == 1  # no replan was asked for
    assert len(api.requests) == 1  # nor the step sent to the same model again
    assert not [e for e in events if isinstance(e, (Replanned, StepCompleted))]
    errored, cancelled = [e for e in events if isinstance(e, StepErrored)]
    assert (errored.worker, errored.status) == ("research", "failed")
    assert text in errored.error
    assert (cancelled.worker, cancelled.status) == ("writer", "cancelled")  # the sibling


async def test_run_raises_step_failed_marked_fatal(wire: Wire, api: StandIn) -> None:
    api.queue(wire.error(401, "authentication_error", "invalid x-api-key"))
    brain = Brain([TWO_STEPS], work=Hang())
    model = wire.make(api, True, 2)
    research = Worker(name="research", description="Looks things up.", model=model)
    async with model:
        with pytest.raises(StepFailed, match="invalid x-api-key") as caught:
            await _team(brain, research).run("Look up and draft")
    assert (caught.value.fatal, caught.value.worker) == (True, "research")
    assert "check the API key" in caught.value.cause


@pytest.mark.parametrize(
    ("status", "kind", "text"),
    [
        (400, "invalid_request_error", "prompt is too long: 210000 tokens > 200000 maximum"),
        (429, "rate_limit_error", "slow down"),
    ],
)
async def test_a_model_error_a_replan_may_fix_is_replanned(
    wire: Wire, api: StandIn, status: int, kind: str, text: str
) -> None:
    api.queue(wire.error(status, kind, text))
    one_step = plan_json({"description": "look it up", "worker": "research"})
    brain = Brain([one_step, one_step])
    model = wire.make(api, True, 0)
    research = Worker(name="research", description="Looks things up.", model=model)
    async with model:
        with pytest.raises(StepFailed, match="no replans left") as caught:
            await _team(brain, research, Budget(replans=1)).run("Look it up")
    assert not caught.value.fatal
    assert len(brain.plan_requests) == 2  # the plan, then the replan
    assert len(api.requests) == 2


async def test_a_team_worker_whose_worker_cannot_call_its_model_fails_the_parent_run(
    wire: Wire, api: StandIn
) -> None:
    api.queue(wire.error(404, "not_found_error", "model: claude-typo"))
    model = wire.make(api, True, 2)
    inner = Brain([plan_json({"description": "look it up", "worker": "research"})])
    research = Worker(name="research", description="Looks things up.", model=model)
    child = Team(name="lab", planner=Planner(model=ScriptedModel(inner)), workers=[research])
    outer = Brain([plan_json({"description": "study it", "worker": "lab"})])
    lab = TeamWorker(name="lab", description="Researches.", team=child)
    team = Team(name="desk", planner=Planner(model=ScriptedModel(outer)), workers=[lab])
    async with model:
        with pytest.raises(StepFailed, match="model: claude-typo") as caught:
            await team.run("Study it")
    assert (caught.value.fatal, caught.value.worker) == (True, "lab")
    assert (len(outer.plan_requests), len(inner.plan_requests), len(api.requests)) == (1, 1, 1)


async def test_a_model_of_ones_own_that_raises_a_401_fails_the_run_at_once() -> None:
    # ModelAPIError is permanent by default for 401, 403 and 404, whoever raises it.
    async def refuse(request: ModelRequest) -> str:
        raise ModelAPIError("my gateway refused the key; set GATEWAY_KEY", status_code=401)

    brain = Brain([TWO_STEPS], work=Hang())
    research = Worker(name="research", description="Looks things up.", model=ScriptedModel(refuse))
    with pytest.raises(StepFailed, match="set GATEWAY_KEY; the run ends without a replan"):
        await _team(brain, research).run("Look up and draft")
    assert len(brain.plan_requests) == 1
