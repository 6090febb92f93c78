"""A finished run leaves no reference cycle through its planner actor: its
objects are freed as the run ends, not left for the cyclic garbage collector
(whose passes over thousands of runs' objects stall the event loop)."""

from __future__ import annotations

import gc

import pytest

from regiment.hierarchy import Planner, Team, Worker
from regiment.hierarchy.run._actor import PlannerActor
from regiment.models import ScriptedModel

from .brains import Brain, plan_json

pytestmark = pytest.mark.anyio


def _planners() -> int:
    return sum(1 for obj in gc.get_objects() if isinstance(obj, PlannerActor))


async def test_finished_runs_leave_no_planner_actor_behind() -> None:
    plan = plan_json({"description": "a"}, {"description": "b", "depends_on": ["s1"]})
    model = ScriptedModel(Brain([plan] * 4))
    team = Team(
        name="t",
        planner=Planner(model=model),
        workers=[Worker(name="w", description="w", model=model)],
    )
    gc.collect()
    gc.disable()
    try:
        async with team.start() as running:
            for _ in range(4):
                result = await running.run("goal")
                assert result.status == "completed"
            assert _planners() == 0  # freed by reference counting alone
    finally:
        gc.enable()
