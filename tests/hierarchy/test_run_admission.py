"""A burst of runs on one started team: callers beyond the first few wait to be
let in before they hold anything (no run id, channel or span yet), and every
one of them still finishes, or goes away cleanly when cancelled while waiting."""

from __future__ import annotations

import functools
import gc
import types

import anyio
import anyio.lowlevel
import pytest

from regiment.hierarchy import Planner, RunningTeam, RunResult, Team, Worker
from regiment.hierarchy._running import STARTING_AT_ONCE
from regiment.models import ScriptedModel

from .brains import Brain, plan_json
from .tasks import busy_tasks, idle_runners

pytestmark = pytest.mark.anyio

_BURST = 3 * STARTING_AT_ONCE + 1


def _team() -> Team:
    plan = plan_json({"description": "a"}, {"description": "b", "depends_on": ["s1"]})
    model = ScriptedModel(Brain([plan] * 1_000))
    worker = Worker(name="w", description="w", model=model)
    return Team(name="t", planner=Planner(model=model), workers=[worker])


async def test_a_burst_of_runs_is_let_in_a_few_at_a_time(anyio_backend: str) -> None:
    results: list[RunResult] = []

    async def one(running: RunningTeam) -> None:
        results.append(await running.run("goal"))

    async with _team().start() as running, anyio.create_task_group() as tg:
        await running.run("warm up")
        for _ in range(_BURST):
            tg.start_soon(one, running)
        # Every caller of the burst gets one turn (on asyncio, in the order they
        # were started, before this task's): those not let in hold no run yet.
        await anyio.lowlevel.checkpoint()
        if anyio_backend == "asyncio":
            assert running.active_runs == STARTING_AT_ONCE
        assert running.active_runs <= STARTING_AT_ONCE
    assert [r.status for r in results] == ["completed"] * _BURST
    assert len({r.run_id for r in results}) == _BURST
    assert all(len(r.steps) == 2 for r in results)
    assert running.active_runs == 0


async def test_runs_cancelled_while_waiting_to_be_let_in_leave_nothing_behind(
    anyio_backend: str,
) -> None:
    done: list[RunResult] = []
    scopes: list[anyio.CancelScope] = []

    async def one(running: RunningTeam) -> None:
        with anyio.CancelScope() as scope:
            scopes.append(scope)
            done.append(await running.run("goal"))

    async with _team().start() as running:
        await running.run("warm up")
        await anyio.wait_all_tasks_blocked()
        baseline = busy_tasks()
        async with anyio.create_task_group() as tg:
            for _ in range(_BURST):
                tg.start_soon(one, running)
            await anyio.lowlevel.checkpoint()
            for scope in scopes[STARTING_AT_ONCE:]:  # those that cannot have been let in yet
                scope.cancel()
        await anyio.wait_all_tasks_blocked()
        assert busy_tasks() == baseline
        assert running.active_runs == 0
    assert idle_runners() == 0
    if anyio_backend == "asyncio":  # the first few were let in, and only they ran
        assert len(done) == STARTING_AT_ONCE
    assert all(r.status == "completed" for r in done)


def _opened_runs() -> int:
    """Run context generators alive: one per caller that is past the start gate (a
    caller still waiting to be let in must hold none, only its wait)."""
    gc.collect()  # earlier tests' garbage
    return sum(
        1
        for obj in gc.get_objects()
        if isinstance(obj, types.AsyncGeneratorType) and obj.ag_code is _OPEN_CODE
    )


_OPEN_CODE = RunningTeam._open.__wrapped__.__code__  # type: ignore[attr-defined]


async def _streamed(running: RunningTeam, goal: str) -> None:
    async with running.stream(goal) as events:
        async for _ in events:
            pass


@pytest.mark.parametrize("way", ["run", "stream"])
async def test_callers_waiting_to_be_let_in_hold_no_run_yet(anyio_backend: str, way: str) -> None:
    # Every object a waiting caller holds is walked by each garbage collection while a
    # burst waits, and makes the next one come sooner: a run's context manager and
    # generator are made once the caller is let in, not while it waits.
    async with _team().start() as running, anyio.create_task_group() as tg:
        await running.run("warm up")
        for _ in range(_BURST):
            tg.start_soon(
                running.run if way == "run" else functools.partial(_streamed, running), "goal"
            )
        await anyio.lowlevel.checkpoint()
        assert _opened_runs() <= STARTING_AT_ONCE
    assert _opened_runs() == 0
    assert running.active_runs == 0
