"""Cancelling the caller's scope stops that run's work and nothing else."""

from __future__ import annotations

import anyio
import pytest

from regiment.hierarchy import Planner, Team, Worker
from regiment.models import ModelRequest, ModelResponse, ScriptedModel, ToolResultPart

from .brains import Brain, PerGoalBrain, plan_json
from .tasks import busy_tasks, idle_runners

pytestmark = pytest.mark.anyio


async def test_cancelling_one_run_stops_its_steps_and_spares_the_other() -> None:
    started = anyio.Event()
    cancelled: list[str] = []
    release_b = anyio.Event()

    async def work(
        description: str, results: list[ToolResultPart], request: ModelRequest
    ) -> ModelResponse | str:
        if description == "A: forever":
            started.set()
            try:
                await anyio.Event().wait()
            except anyio.get_cancelled_exc_class():
                cancelled.append(description)
                raise
        if description == "warm-up":
            return "warm"
        await release_b.wait()
        return "b done"

    plans = {
        "goal A": plan_json({"description": "A: forever"}),
        "goal B": plan_json({"description": "B: slow"}),
        "warm up": plan_json({"description": "warm-up"}),
    }

    brain = PerGoalBrain(plans, work=work)
    model = ScriptedModel(brain)
    team = Team(
        name="t",
        planner=Planner(model=model),
        workers=[Worker(name="w", description="w", model=model)],
    )
    async with team.start() as running:
        # The baseline is a warm team; parked runners are not counted (busy_tasks).
        await running.run("warm up")
        await anyio.wait_all_tasks_blocked()
        baseline = busy_tasks()
        results = []
        async with anyio.create_task_group() as tg:

            async def run_b() -> None:
                results.append(await running.run("goal B"))

            tg.start_soon(run_b)
            with anyio.CancelScope() as scope:
                tg.start_soon(lambda: _cancel_when(started, scope))
                await running.run("goal A")
            assert scope.cancelled_caught
            assert cancelled == ["A: forever"]
            release_b.set()
        assert results[0].committed == ("s1",)
        assert results[0].answer == "final answer"
        await anyio.wait_all_tasks_blocked()
        assert busy_tasks() == baseline
    assert idle_runners() == 0


async def _cancel_when(event: anyio.Event, scope: anyio.CancelScope) -> None:
    await event.wait()
    scope.cancel()


async def test_leaving_the_team_block_leaves_no_tasks() -> None:
    async def work(
        description: str, results: list[ToolResultPart], request: ModelRequest
    ) -> ModelResponse | str:
        await anyio.Event().wait()
        return "never"

    brain = Brain([plan_json({"description": "forever"})], work=work)
    model = ScriptedModel(brain)
    team = Team(
        name="t",
        planner=Planner(model=model),
        workers=[Worker(name="w", description="w", model=model)],
    )
    before = busy_tasks()
    with anyio.move_on_after(0.05):
        async with team.start() as running:
            await running.run("goal")
    assert busy_tasks() == before
    assert idle_runners() == 0


async def test_a_run_cancelled_while_its_step_waits_for_a_busy_worker_ends_at_once() -> None:
    # The worker's one slot is held by another run's step: the cancelled run's
    # step waits in the queue, and the cancel must not wait for that slot.
    # (The held step ends only when released, after the cancel is checked.)
    holding = anyio.Event()
    release = anyio.Event()
    ran: list[str] = []

    async def work(
        description: str, results: list[ToolResultPart], request: ModelRequest
    ) -> ModelResponse | str:
        ran.append(description)
        if description == "hold the worker":
            holding.set()
            await release.wait()
        return "done"

    plans = {
        "goal A": plan_json({"description": "hold the worker"}),
        "goal B": plan_json({"description": "queued"}),
    }

    model = ScriptedModel(PerGoalBrain(plans, work=work))
    team = Team(
        name="t",
        planner=Planner(model=model),
        # An hour's grace: a cancel that waited for the held step to free the worker's
        # slot would wait it all out (it used to wait out the default 5 s), and the
        # test would fail on its hang guard; no wall-clock threshold needed.
        workers=[
            Worker(
                name="w", description="w", model=model, max_concurrent_steps=1, cancel_grace=3600
            )
        ],
    )
    async with team.start() as running, anyio.create_task_group() as tg:
        results = []

        async def run_a() -> None:
            results.append(await running.run("goal A"))

        tg.start_soon(run_a)
        await holding.wait()
        with anyio.fail_after(50):  # a hang guard (the grace is 3,600 s), not a speed check
            with anyio.move_on_after(0.2) as scope:
                await running.run("goal B")
        assert scope.cancelled_caught
        assert running.active_runs == 1
        release.set()
    assert ran == ["hold the worker"]  # the cancelled step never started
    assert results[0].answer == "final answer"
