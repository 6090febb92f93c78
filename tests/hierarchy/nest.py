"""The run above that the nested-money tests share: its step s1 goes to a nested team,
beside ``SHORT`` short steps that are committed (and give back what they did not spend)
before the nested team is let go on."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

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


def _plan() -> str:
    steps = [{"id": "s1", "description": "research", "worker": "research"}]
    steps += [{"id": f"s{i}", "description": f"note {i}", "worker": "w"} for i in range(2, 9)]
    return plan_json(*steps)


def notes_after(dug: anyio.Event) -> Callable[[ModelRequest], Awaitable[str]]:
    """A brain for ``run_above`` whose notes come back a moment after ``dug`` is set: still
    in flight, holding their shares, as the nested run asks for what it needs next."""
    plan = _plan()

    async def above(request: ModelRequest) -> str:
        if request.role == "planner":
            return plan
        if request.role == "synthesizer":
            return "the answer"
        await dug.wait()
        await anyio.sleep(0.05)
        return "noted"

    return above


def run_above(
    child: Team,
    budget: Budget,
    price: Price,
    brain: Callable[[ModelRequest], str | Awaitable[str]] | None = None,
) -> Team:
    """The run above: s1 to ``child``, s2..s8 short notes by a model at ``price``
    (``brain``: its answers; by default the plan, then notes at once)."""
    plan = _plan()

    def above(request: ModelRequest) -> str:
        return plan if request.role == "planner" else "noted"

    model = ScriptedModel(brain or above, price=price)
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
