"""A finished run leaves no reference cycle through its planner actor: its
objects are freed as the run ends, not left for the cyclic garbage collector
(whose passes over thousands of runs' objects stall the event loop)."""

from __future__ import annotations

import contextlib
import gc
from pathlib import Path

import pytest

from regiment.errors import RunError
from regiment.hierarchy import Planner, RunningTeam, Team, Worker
from regiment.hierarchy.run._actor import PlannerActor
from regiment.models import ModelRequest, ScriptedModel, ToolResultPart, tool_call_response
from regiment.tools import tool

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


@tool
async def flaky() -> str:
    """Fails, as a tool's body may."""
    raise RuntimeError("disk on fire")


async def _tool_fails(
    description: str, results: list[ToolResultPart], request: ModelRequest
) -> object:
    return "noted" if results else tool_call_response("flaky", {})


async def _model_fails(
    description: str, results: list[ToolResultPart], request: ModelRequest
) -> str:
    raise RuntimeError("the worker's model fell over")


async def _left_in_cycles(running: RunningTeam, runs: int) -> list[object]:
    """What ``runs`` runs of ``running`` leave that only the cycle collector can free."""
    await _one(running)  # warm: first-use caches are not a run's garbage
    gc.collect()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        for _ in range(runs):
            await _one(running)
        gc.collect()
        return list(gc.garbage)
    finally:
        gc.set_debug(0)
        gc.garbage.clear()


async def _one(running: RunningTeam) -> None:
    with contextlib.suppress(RunError):  # a failed step, replanned until none are left
        await running.run("goal")


@pytest.mark.parametrize("work", [_tool_fails, _model_fails], ids=["tool fails", "model fails"])
async def test_a_failure_in_a_run_leaves_no_reference_cycle(work: object) -> None:
    # An exception kept in a variable of a frame its own traceback holds is a cycle:
    # every run that hits one leaves its frames for a full collection to find.
    plan = plan_json({"description": "a"})
    model = ScriptedModel(Brain([plan] * 50, work=work))  # type: ignore[arg-type]
    worker = Worker(name="w", description="w", model=model, tools=[flaky])
    team = Team(name="t", planner=Planner(model=model), workers=[worker])
    async with team.start() as running:
        left = await _left_in_cycles(running, 3)
    assert [type(obj).__name__ for obj in left] == []


async def test_a_journaled_run_leaves_no_reference_cycle(tmp_path: Path) -> None:
    # Its lease's heartbeat, a helper task of the run's planner, ends as the run's end
    # is noted; cancelled as the planner stops, it left ~50 objects in a cycle a run.
    plan = plan_json({"description": "a"}, {"description": "b", "depends_on": ["s1"]})
    model = ScriptedModel(Brain([plan] * 8))
    team = Team(
        name="t",
        planner=Planner(model=model),
        workers=[Worker(name="w", description="w", model=model)],
    )
    async with team.start(journal=str(tmp_path / "runs.db")) as running:
        left = await _left_in_cycles(running, 3)
    assert [type(obj).__name__ for obj in left] == []
