"""A worker parks the runners of finished steps (up to ``IDLE_RUNNERS``) and
runs later steps on them: reuse, the bound, cancellation and failures on a
reused runner, and no runner left once the team stops."""

from __future__ import annotations

import anyio
import pytest

from regiment.hierarchy import Planner, StepErrored, Team, Worker
from regiment.hierarchy.workers._step_jobs import IDLE_RUNNERS, IdleRunners
from regiment.models import ModelRequest, ModelResponse, ScriptedModel, ToolResultPart

from .brains import Brain, Hang, Overlap, WorkFn, plan_json
from .tasks import busy_tasks, idle_runners

pytestmark = pytest.mark.anyio


def _parallel(count: int, prefix: str = "task") -> str:
    return plan_json(*({"description": f"{prefix} {i}"} for i in range(1, count + 1)))


def _team(plans: list[str], work: WorkFn, *, steps: int = 10) -> Team:
    model = ScriptedModel(Brain(plans, work=work))
    return Team(
        name="t",
        planner=Planner(model=model, max_steps=steps),
        workers=[Worker(name="w", description="w", model=model, max_concurrent_steps=steps)],
        concurrency=steps,
    )


def _runner_ids() -> set[int]:
    return {task.id for task in anyio.get_running_tasks() if task.name == "w steps"}


async def test_the_runners_of_a_burst_are_parked_and_run_the_next_burst() -> None:
    bursts = [Overlap(3), Overlap(3)]  # each holds its three steps until all three run

    async def work(
        description: str, results: list[ToolResultPart], request: ModelRequest
    ) -> ModelResponse | str:
        return await bursts[0](description, results, request)

    team = _team([_parallel(3), _parallel(3)], work)
    async with team.start() as running:
        first = await running.run("three at once")
        await anyio.wait_all_tasks_blocked()
        assert idle_runners() == 3
        runners = _runner_ids()
        assert len(runners) == 3
        done = bursts.pop(0)
        second = await running.run("three at once again")
        await anyio.wait_all_tasks_blocked()
        assert _runner_ids() == runners  # the same three tasks: no runner was started
        assert idle_runners() == 3
    assert sorted(first.committed) == sorted(second.committed) == ["s1", "s2", "s3"]
    assert done.peak == bursts[0].peak == 3
    assert idle_runners() == 0


async def test_no_more_than_idle_runners_are_parked() -> None:
    together = IDLE_RUNNERS + 2
    overlap = Overlap(together)
    team = _team([_parallel(together)], overlap, steps=together)
    async with team.start() as running:
        result = await running.run("a wide plan")
        await anyio.wait_all_tasks_blocked()
        assert overlap.peak == together  # every step had a runner of its own
        assert len(result.committed) == together
        assert idle_runners() == IDLE_RUNNERS  # the two beyond the bound ended
        assert len(_runner_ids()) == IDLE_RUNNERS  # and every runner left is parked
    assert idle_runners() == 0


async def test_a_parked_runner_is_woken_last_in_first_out(anyio_backend: str) -> None:
    from regiment.actors import open_actor_system

    async with open_actor_system() as system:
        idle = IdleRunners(limit=2)
        woken: list[str] = []
        refused: list[str] = []

        async def park(name: str) -> None:
            if await idle.park(system.new_wakeup()):
                woken.append(name)
            else:
                refused.append(name)

        async with anyio.create_task_group() as tg:
            for name in ("first", "second", "third"):
                tg.start_soon(park, name)
                await anyio.wait_all_tasks_blocked()
            assert refused == ["third"]  # the bound: two wait already
            assert len(idle.parked) == 2
            idle.wake_one()
            await anyio.wait_all_tasks_blocked()
            assert woken == ["second"]
            idle.wake_one()
        assert woken == ["second", "first"]
        assert not idle.parked


async def test_cancelling_a_step_on_a_parked_runner_stops_it() -> None:
    hang = Hang()

    async def work(
        description: str, results: list[ToolResultPart], request: ModelRequest
    ) -> ModelResponse | str:
        return await hang(description, results, request) if description == "forever" else "ok"

    team = _team(
        [_parallel(1, "warm"), plan_json({"description": "forever"}), _parallel(1, "again")], work
    )
    async with team.start() as running:
        await running.run("warm up")
        await anyio.wait_all_tasks_blocked()
        runners = _runner_ids()
        assert idle_runners() == 1
        baseline = busy_tasks()
        async with anyio.create_task_group() as tg:
            tg.start_soon(running.run, "goal")
            await hang.started.wait()
            await anyio.wait_all_tasks_blocked()
            assert _runner_ids() == runners  # the parked runner took the step
            assert idle_runners() == 0
            tg.cancel_scope.cancel()
        await anyio.wait_all_tasks_blocked()
        assert hang.cancelled == ["forever"]  # the step itself saw the cancellation
        assert busy_tasks() == baseline
        assert _runner_ids() == runners  # parked again
        assert idle_runners() == 1
        assert (await running.run("after")).committed == ("s1",)
    assert idle_runners() == 0


async def test_a_step_failing_on_a_parked_runner_is_reported() -> None:
    async def work(
        description: str, results: list[ToolResultPart], request: ModelRequest
    ) -> ModelResponse | str:
        if description == "fragile 1":
            raise RuntimeError("disk on fire")
        return "ok"

    plans = [_parallel(1, "warm"), _parallel(1, "fragile"), _parallel(1, "sturdy")]
    team = _team([*plans, _parallel(1, "after")], work)
    async with team.start() as running:
        await running.run("warm up")
        await anyio.wait_all_tasks_blocked()
        runners = _runner_ids()
        result = await running.run("goal")  # the failed step is replanned
        errored = [e for e in result.events if isinstance(e, StepErrored)]
        assert [(e.step_id, e.status) for e in errored] == [("s1", "failed")]
        assert "RuntimeError: disk on fire" in errored[0].error
        assert result.committed == ("s2",)
        await anyio.wait_all_tasks_blocked()
        assert _runner_ids() == runners  # the runner survived its step's failure
        assert (await running.run("after")).committed == ("s1",)
    assert idle_runners() == 0
