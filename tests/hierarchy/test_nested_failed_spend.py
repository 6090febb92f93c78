"""A team worker's child run that fails (its planner never gives a valid plan, say) made
its model calls and spent their tokens all the same. The step's report said 0 tokens and
the run above counted none of them: a run whose one step was a child team failing on its
plan ended with 4 model calls (its own) for 16 made."""

from __future__ import annotations

import pytest

from regiment.errors import RunError
from regiment.hierarchy import Planner, Team, TeamWorker, Worker
from regiment.hierarchy import events as ev
from regiment.models import ModelRequest, ModelResponse, ScriptedModel, Usage, text_response

pytestmark = pytest.mark.anyio

REPLY = Usage(input_tokens=100, output_tokens=10)


class Calls:
    """A scripted brain that counts its calls and what they report."""

    def __init__(self, plan: str) -> None:
        self.plan, self.made = plan, 0

    def __call__(self, request: ModelRequest) -> ModelResponse:
        self.made += 1
        if request.role in ("planner", "replanner"):
            return text_response(self.plan, usage=REPLY)
        return text_response("done", usage=REPLY)


def _teams() -> tuple[Team, Calls, Calls]:
    outer, inner = Calls('{"steps": [{"description": "ask the desk"}]}'), Calls("[1, 2")
    child_model = ScriptedModel(inner)
    child = Team(
        name="desk",
        planner=Planner(model=child_model),
        workers=[Worker(name="clerk", description="Answers.", model=child_model)],
    )
    team = Team(
        name="front",
        planner=Planner(model=ScriptedModel(outer)),
        workers=[TeamWorker(name="desk", description="A team.", team=child)],
    )
    return team, outer, inner


async def test_a_failed_child_runs_calls_are_counted_by_its_step_and_the_run() -> None:
    team, outer, inner = _teams()
    async with team.start() as running, running.stream("help") as events:
        seen = [event async for event in events]
    errored = [e for e in seen if isinstance(e, ev.StepErrored)]
    assert errored
    # each of the step's attempts: the child's planner asked 3 times (max_plan_attempts)
    assert [e.usage for e in errored] == [REPLY + REPLY + REPLY] * len(errored)
    end = seen[-1]
    assert isinstance(end, ev.RunFailed)
    made = outer.made + inner.made
    assert inner.made == 3 * len(errored)
    assert end.model_calls == made  # it said outer.made
    assert end.usage.input_tokens == 100 * made
    assert end.usage.output_tokens == 10 * made


async def test_run_raises_with_every_call_counted() -> None:
    team, outer, inner = _teams()
    with pytest.raises(RunError) as caught:
        await team.run("help")
    assert caught.value.failed is not None
    assert caught.value.failed.model_calls == outer.made + inner.made
    assert caught.value.failed.usage.total_tokens == 110 * (outer.made + inner.made)
