"""Wherever a caller's cancel lands in ``running.run``, the run's actor and tasks
go away: live tasks and the team's table of runs return to their baseline."""

from __future__ import annotations

import anyio
import anyio.lowlevel
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from regiment.hierarchy import Planner, RunningTeam, Team, Worker
from regiment.models import (
    ModelRequest,
    ModelResponse,
    ScriptedModel,
    ToolResultPart,
    tool_call_response,
)
from regiment.tools import tool

from .brains import Brain, plan_json
from .tasks import busy_tasks


@tool
async def probe(n: int) -> int:
    """Probe."""
    await anyio.lowlevel.checkpoint()
    return n


async def _work(
    description: str, results: list[ToolResultPart], request: ModelRequest
) -> ModelResponse | str:
    if not results:
        return tool_call_response("probe", {"n": 1})
    return f"did: {description}"


def _team() -> Team:
    plan = plan_json(
        {"description": "a"}, {"description": "b"}, {"description": "c", "depends_on": ["s1"]}
    )
    model = ScriptedModel(Brain([plan] * 10_000, work=_work))
    worker = Worker(name="w", description="w", model=model, tools=[probe])
    return Team(name="t", planner=Planner(model=model), workers=[worker])


async def _cancel_after(checkpoints: int, scope: anyio.CancelScope) -> None:
    for _ in range(checkpoints):
        await anyio.lowlevel.checkpoint()
    scope.cancel()


async def _cancelled_run(running: RunningTeam, checkpoints: int) -> None:
    """One ``running.run`` whose scope is cancelled after ``checkpoints`` checkpoints
    of a sibling task (0: cancelled before the call, like ``move_on_after(0)``)."""
    async with anyio.create_task_group() as tg:
        with anyio.CancelScope() as scope:
            if checkpoints == 0:
                scope.cancel()
            else:
                tg.start_soon(_cancel_after, checkpoints, scope)
            await running.run("goal")
        tg.cancel_scope.cancel()  # the run may have finished before the cancel


async def _scenario(sequential: list[int], together: list[int]) -> tuple[int, int, int]:
    async with _team().start() as running:
        await running.run("warm up")
        await anyio.wait_all_tasks_blocked()
        baseline = busy_tasks()
        for checkpoints in sequential:
            await _cancelled_run(running, checkpoints)
        async with anyio.create_task_group() as tg:
            for checkpoints in together:
                tg.start_soon(_cancelled_run, running, checkpoints)
        await anyio.wait_all_tasks_blocked()
        return baseline, busy_tasks(), running.active_runs


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
@settings(max_examples=30, deadline=None)
@given(
    sequential=st.lists(st.integers(0, 80), max_size=8),
    together=st.lists(st.integers(0, 80), max_size=8),
)
def test_a_cancel_anywhere_leaves_no_task_behind(
    backend: str, sequential: list[int], together: list[int]
) -> None:
    baseline, after, active = anyio.run(_scenario, sequential, together, backend=backend)
    assert after == baseline
    assert active == 0


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_fifty_runs_cancelled_at_once_leave_nothing(backend: str) -> None:
    async def main() -> tuple[int, int, int]:
        async with _team().start() as running:
            await running.run("warm up")
            await anyio.wait_all_tasks_blocked()
            baseline = busy_tasks()
            for _ in range(50):
                with anyio.move_on_after(0):
                    await running.run("goal")
            await anyio.wait_all_tasks_blocked()
            return baseline, busy_tasks(), running.active_runs

    baseline, after, active = anyio.run(main, backend=backend)
    assert (after, active) == (baseline, 0)
