"""A worker taking steps back to back that never wait (an instant model) still lets
other tasks run: its runner yields the event loop now and then (``HOLD``)."""

from __future__ import annotations

import json

import anyio
import pytest

from regiment.hierarchy import Planner, Team, Worker
from regiment.models import ModelRequest, ModelResponse, ScriptedModel, ToolResultPart

from .brains import Brain

pytestmark = pytest.mark.anyio

_STEPS = 200


def _chain(n: int) -> str:
    steps: list[dict[str, object]] = [{"id": "s1", "description": "step 1"}]
    steps += [
        {"id": f"s{i}", "description": f"step {i}", "depends_on": [f"s{i - 1}"]}
        for i in range(2, n + 1)
    ]
    return json.dumps({"steps": steps})


async def test_steps_that_never_wait_do_not_hold_the_loop_for_the_whole_run() -> None:
    done = 0

    async def work(
        description: str, results: list[ToolResultPart], request: ModelRequest
    ) -> ModelResponse | str:
        nonlocal done
        done += 1  # no await: an instant model
        return f"did: {description}"

    model = ScriptedModel(Brain([_chain(_STEPS)], work=work))
    team = Team(
        name="eager",
        planner=Planner(model=model, max_steps=_STEPS),
        workers=[Worker(name="w", description="does steps", model=model)],
    )
    seen_mid_run: list[int] = []
    async with team.start() as running, anyio.create_task_group() as tg:

        async def watch() -> None:
            while True:  # one look per turn of the event loop
                if 0 < done < _STEPS:
                    seen_mid_run.append(done)
                await anyio.lowlevel.checkpoint()

        tg.start_soon(watch)
        result = await running.run("do them in order")
        tg.cancel_scope.cancel()
    assert len(result.committed) == _STEPS
    assert seen_mid_run, "the loop was never free while the steps ran"
