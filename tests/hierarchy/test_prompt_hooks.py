"""A ``Prompts`` hook that raises as a run or a team starts says which hook of which class
raised, and what: the run fails with a ``RunError`` (journaled as failed), the team's
start with a ``ConfigError`` naming the worker. (They said "ActorFailed: actor 'run-…'
failed to start: ValueError(...)" and "actor 't/w' failed to start: KeyError(...)".)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest

from regiment.errors import ConfigError, RunError
from regiment.hierarchy import Planner, Prompts, Team, Worker
from regiment.journal import open_journal
from regiment.models import ScriptedModel

from .brains import Brain, plan_json

pytestmark = pytest.mark.anyio

FIX = "fix that method (it must return the text), or remove it to use regiment's default"


class _NoPlannerTemplate(Prompts):
    def planner_system(
        self,
        *,
        team: str,
        workers: Mapping[str, tuple[str, Sequence[str]]],
        checks: Mapping[str, str],
        max_steps: int,
    ) -> str:
        raise ValueError("no template file")


class _NoWorkerTone(Prompts):
    def worker_system(self, *, worker: str, description: str, system_prompt: str) -> str:
        raise KeyError("tone")


def _team(prompts: Prompts) -> Team:
    model = ScriptedModel(Brain([plan_json({"description": "x"})]))
    worker = Worker(name="w", description="works", model=model)
    return Team(name="t", planner=Planner(model=model, prompts=prompts), workers=[worker])


async def test_a_raising_planner_system_fails_the_run_naming_the_hook(tmp_path: Path) -> None:
    where = tmp_path / "runs.db"
    async with _team(_NoPlannerTemplate()).start(journal=where) as running:
        with pytest.raises(RunError) as caught:
            await running.run("goal")
        with pytest.raises(RunError, match=r"_NoPlannerTemplate\.planner_system raised"):
            async with running.stream("goal") as events:
                [event async for event in events]
    assert str(caught.value) == (
        "the Prompts hook _NoPlannerTemplate.planner_system raised ValueError: "
        f"no template file; {FIX}"
    )
    assert isinstance(caught.value.__cause__, ValueError)
    journal = await open_journal(where)
    try:
        assert {info.status for info in await journal.list_runs()} == {"failed"}
    finally:
        await journal.close()


async def test_a_raising_worker_system_fails_the_start_naming_the_worker() -> None:
    with pytest.raises(ConfigError) as caught:
        async with _team(_NoWorkerTone()).start():
            pass
    assert str(caught.value) == (
        "worker 'w' cannot start: the Prompts hook _NoWorkerTone.worker_system raised "
        f"KeyError: 'tone'; {FIX}"
    )
    assert isinstance(caught.value.__cause__, KeyError)
