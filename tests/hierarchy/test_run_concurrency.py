"""A run can cap its own fan-out; a worker's limit is shared by every run."""

from __future__ import annotations

import anyio
import pytest

from regiment.errors import ConfigError
from regiment.hierarchy import Planner, RunCompleted, Team, Worker
from regiment.models import ScriptedModel

from .brains import Brain, Overlap, plan_json

pytestmark = pytest.mark.anyio

_FOUR = plan_json(*({"description": f"part {i}"} for i in range(4)))


def _team(brain: Brain, *, max_concurrent_steps: int = 8) -> Team:
    model = ScriptedModel(brain)
    worker = Worker(
        name="w", description="w", model=model, max_concurrent_steps=max_concurrent_steps
    )
    return Team(name="t", planner=Planner(model=model), workers=[worker], concurrency=8)


@pytest.mark.parametrize("cap", [1, 2, 3])
async def test_a_run_caps_its_own_fan_out(cap: int) -> None:
    overlap = Overlap(cap)  # holds each step until ``cap`` are in flight
    async with _team(Brain([_FOUR], work=overlap)).start() as running:
        result = await running.run("four parts", concurrency=cap)
    assert result.status == "completed"
    assert overlap.peak == cap


async def test_stream_takes_the_same_cap() -> None:
    overlap = Overlap(2)
    async with (
        _team(Brain([_FOUR], work=overlap)).start() as running,
        running.stream("four parts", concurrency=2) as events,
    ):
        last = [e async for e in events][-1]
    assert isinstance(last, RunCompleted)
    assert overlap.peak == 2


async def test_a_workers_limit_is_shared_by_every_run_of_the_team() -> None:
    overlap = Overlap(2)
    brain = Brain([_FOUR, _FOUR], work=overlap)
    async with (
        _team(brain, max_concurrent_steps=2).start() as running,
        anyio.create_task_group() as tg,
    ):
        for _ in range(2):
            tg.start_soon(running.run, "four parts")
    assert overlap.peak == 2  # eight steps of two runs, never more than two at once


@pytest.mark.parametrize("bad", [0, -1, True, 1.5])
async def test_a_bad_concurrency_says_what_to_pass(bad: object) -> None:
    async with _team(Brain([_FOUR])).start() as running:
        with pytest.raises(ConfigError, match="at least 1"):
            await running.run("goal", concurrency=bad)  # type: ignore[arg-type]
        assert running.active_runs == 0
