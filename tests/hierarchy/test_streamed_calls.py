"""A streamed run's planner calls: its reader lends no task (it reads events), so
the calls run in a task of the team's supervisor, and the run's planner (spawned
dormant) never gets a task of its own. A call there fails its run, not the team,
and is cancelled with its run."""

from __future__ import annotations

import anyio
import pytest

from regiment.hierarchy import (
    Planner,
    RunCompleted,
    RunFailed,
    RunStarted,
    Team,
    Worker,
)
from regiment.models import ModelRequest, ScriptedModel, text_response

from .brains import plan_json

pytestmark = pytest.mark.anyio


def _actor_tasks_of_runs() -> list[str]:
    names = [task.name or "" for task in anyio.get_running_tasks()]
    return [name for name in names if name.startswith("actor run-")]


def _team(planner_brain: ScriptedModel) -> Team:
    worker = Worker(
        name="clerk", description="files", model=ScriptedModel(lambda r: text_response("filed"))
    )
    return Team(name="t", planner=Planner(model=planner_brain), workers=[worker])


async def test_the_calls_run_in_a_supervisor_task_and_the_planner_gets_none() -> None:
    seen: list[tuple[str, str, list[str]]] = []

    def planner(request: ModelRequest) -> str:
        task = anyio.get_current_task().name or ""
        seen.append((request.role or "", task, _actor_tasks_of_runs()))
        return plan_json({"description": "file it"}) if request.role == "planner" else "done"

    async with _team(ScriptedModel(planner)).start() as running:
        for _ in range(2):  # a second run on the same started team does the same
            async with running.stream("file the form") as events:
                got = [event async for event in events]
            assert isinstance(got[-1], RunCompleted)
            assert _actor_tasks_of_runs() == []
    run_ids = [e.run_id for e in got if isinstance(e, RunStarted)]
    assert len(run_ids) == 1
    assert [(role, task) for role, task, _ in seen[-2:]] == [
        ("planner", f"{run_ids[0]} model calls"),
        ("synthesizer", f"{run_ids[0]} model calls"),
    ]
    assert all(tasks == [] for _, _, tasks in seen)  # no planner ever woke a task


async def test_a_raising_call_fails_its_run_and_the_team_runs_on() -> None:
    calls = 0

    def planner(request: ModelRequest) -> str:
        nonlocal calls
        calls += 1
        if calls == 1:
            raise RuntimeError("the model's endpoint is down")
        return plan_json({"description": "file it"}) if request.role == "planner" else "done"

    async with _team(ScriptedModel(planner)).start() as running:
        async with running.stream("file the form") as events:
            first = [event async for event in events]
        async with running.stream("file the form") as events:
            second = [event async for event in events]
    failed = first[-1]
    assert isinstance(failed, RunFailed)
    assert "the model's endpoint is down" in failed.message
    assert isinstance(second[-1], RunCompleted)


async def test_leaving_the_stream_cancels_the_call_in_the_supervisor_task() -> None:
    entered, ended = anyio.Event(), anyio.Event()

    async def planner(request: ModelRequest) -> str:
        entered.set()
        try:
            await anyio.sleep_forever()
        finally:
            ended.set()
        return "never"

    async with _team(ScriptedModel(planner)).start() as running:
        async with running.stream("file the form") as events:
            async for event in events:
                if isinstance(event, RunStarted):
                    await entered.wait()
                    break  # leaving the block cancels the run
        with anyio.fail_after(10):
            await ended.wait()  # the call was cancelled, not left running
        assert running.active_runs == 0
        tasks = [t.name for t in anyio.get_running_tasks()]
        assert not [name for name in tasks if (name or "").endswith("model calls")]
