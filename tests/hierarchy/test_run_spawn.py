"""A run's planner actor is spawned in the caller's task, as a child of the team's supervisor."""

from __future__ import annotations

import pytest

from regiment.errors import ActorStopped
from regiment.hierarchy import Planner, Team, Worker
from regiment.models import ScriptedModel

from .brains import Brain, plan_json

pytestmark = pytest.mark.anyio


def _team() -> Team:
    model = ScriptedModel(Brain([plan_json({"description": "one"})] * 2))
    return Team(
        name="spawning",
        planner=Planner(model=model),
        workers=[Worker(name="w", description="does steps", model=model)],
    )


async def test_a_run_asked_of_a_stopped_team_is_refused_and_says_why() -> None:
    async with _team().start() as running:
        first = await running.run("do it")
    assert first.status == "completed"
    with pytest.raises(ActorStopped) as caught:
        await running.run("do it again")
    # It said only "the team is stopping", of a team whose block had been left: stopped.
    assert str(caught.value) == (
        "actor 'spawning/planner' has stopped: the team is stopping or has stopped (its "
        "`async with team.start()` block was left), so no run can start; run goals inside "
        "that block, or start the team again"
    )
    assert running.active_runs == 0  # the refused run left nothing behind


async def test_runs_after_one_another_each_get_a_fresh_planner() -> None:
    model = ScriptedModel(Brain([plan_json({"description": "one"})] * 3))
    team = Team(
        name="spawning",
        planner=Planner(model=model),
        workers=[Worker(name="w", description="does steps", model=model)],
    )
    async with team.start() as running:
        results = [await running.run(f"goal {n}") for n in range(3)]
    assert [r.status for r in results] == ["completed"] * 3
    assert len({r.run_id for r in results}) == 3
