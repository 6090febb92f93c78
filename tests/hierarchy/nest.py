"""The run above that the nested-money tests share: its step s1 goes to a nested team,
beside ``SHORT`` short steps that are committed (and give back what they did not spend)
before the nested team is let go on."""

from __future__ import annotations

import anyio

from regiment.hierarchy import (
    Budget,
    Planner,
    RunResult,
    StepCompleted,
    Team,
    TeamWorker,
    Worker,
)
from regiment.hierarchy.events import RunCompleted
from regiment.models import ModelRequest, Price, ScriptedModel

from .brains import plan_json

SHORT = 7  # the run above's short steps beside the one it gives the nested team


def run_above(child: Team, budget: Budget, price: Price) -> Team:
    """The run above: s1 to ``child``, s2..s8 short notes by a model at ``price``."""
    steps = [{"id": "s1", "description": "research", "worker": "research"}]
    steps += [{"id": f"s{i}", "description": f"note {i}", "worker": "w"} for i in range(2, 9)]
    plan = plan_json(*steps)

    def above(request: ModelRequest) -> str:
        return plan if request.role == "planner" else "noted"

    model = ScriptedModel(above, price=price)
    return Team(
        name="outer",
        planner=Planner(model=model, max_steps=8),
        workers=[
            TeamWorker(name="research", description="digs deep", team=child),
            Worker(name="w", description="notes", model=model),
        ],
        budget=budget,
        concurrency=8,
    )


async def run_releasing(team: Team, hold: anyio.Event) -> RunResult:
    """Run ``team`` on a goal, setting ``hold`` once the ``SHORT`` steps are committed;
    the run must complete."""
    completed = 0
    async with team.start() as running, running.stream("goal") as events:
        async for event in events:
            completed += isinstance(event, StepCompleted)
            if completed == SHORT:
                hold.set()
    assert isinstance(events.ending, RunCompleted)
    return events.ending.result
