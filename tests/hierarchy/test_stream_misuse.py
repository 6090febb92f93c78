"""A stream read the way other libraries' streams are read says how to read it.

``async for event in running.stream(goal)`` failed with Python's own "'async for'
requires an object with __aiter__ method, got Streamed", which names neither the fix nor
the run; ``await`` and a plain ``with`` likewise. Nothing starts in any of them, and the
team serves the next run.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import pytest

from regiment.errors import ConfigError
from regiment.hierarchy import Planner, RunningTeam, Team, Worker
from regiment.models import ScriptedModel
from tests.hierarchy.brains import Brain, plan_json

pytestmark = pytest.mark.anyio


async def _async_for(running: RunningTeam) -> None:
    async for _ in running.stream("goal"):  # type: ignore[attr-defined]
        pass


async def _await(running: RunningTeam) -> None:
    await running.stream("goal")  # type: ignore[misc]


async def _with(running: RunningTeam) -> None:
    with running.stream("goal"):  # type: ignore[attr-defined]
        pass


async def _resume_async_for(running: RunningTeam) -> None:
    async for _ in running.resume_stream("run-1"):  # type: ignore[attr-defined]
        pass


@pytest.mark.parametrize(
    ("misuse", "says"),
    [
        (_async_for, "`async for event in running.stream(goal)` does not read a stream"),
        (_await, "`await running.stream(goal)` does not read a stream"),
        (_with, "`with running.stream(goal)` does not read a stream"),
        (_resume_async_for, "`async for event in running.resume_stream(run_id)` does not"),
    ],
)
async def test_a_stream_not_entered_with_async_with_says_how_to_read_it(
    misuse: Callable[[RunningTeam], Awaitable[None]], says: str
) -> None:
    brain = Brain([plan_json({"description": "x"})] * 2)
    model = ScriptedModel(brain)
    team = Team(
        name="t",
        planner=Planner(model=model),
        workers=[Worker(name="w", description="works", model=model)],
    )
    async with team.start() as running:
        with pytest.raises(ConfigError) as caught:  # the code is to fix; a TypeError too
            await misuse(running)
        assert isinstance(caught.value, TypeError)
        assert says in str(caught.value)
        assert "`async with running." in str(caught.value)
        assert not brain.plan_requests  # nothing started
        assert (await running.run("next")).status == "completed"
