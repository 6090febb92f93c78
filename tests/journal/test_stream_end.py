"""A journaled ``stream()`` gives its last event only once the run's end is in the journal.

``run()`` returns once the journal has closed; a reader of ``stream()`` got
``RunCompleted`` (or ``RunFailed``) as the planner emitted it, before the end was
committed, so a process killed right after acting on it left the run listed as
running. Here a second journal on the same SQLite file or PostgreSQL database reads
the run's status the moment the reader holds its last event.
"""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from regiment import ScriptedModel
from regiment.hierarchy import Planner, RunCompleted, RunFailed, Team, Worker
from regiment.journal import open_journal
from regiment.models import ModelRequest, ModelResponse, text_response

from .test_crash_resume import where

pytestmark = pytest.mark.anyio

__all__ = ("where",)  # the fixture, shared with the crash tests


def _brain(request: ModelRequest) -> ModelResponse:
    if request.role == "planner":
        return text_response('{"steps": [{"id": "s1", "description": "answer"}]}')
    return text_response("done" if request.role == "worker" else "the answer")


def _team() -> Team:
    model = ScriptedModel(_brain)
    worker = Worker(name="clerk", description="Answers.", model=model)
    return Team(name="enders", planner=Planner(model=model), workers=[worker])


async def test_a_streamed_runs_last_event_comes_once_its_end_is_journaled(
    where: str, tmp_path: Path
) -> None:
    journal, reader = await open_journal(where), await open_journal(where)
    try:
        async with _team().start(journal=journal) as running:
            for _ in range(5):  # a commit on the writer thread is a race; every one counts
                async with running.stream("do it") as events:
                    async for event in events:
                        if isinstance(event, RunCompleted | RunFailed):
                            info = await reader.get_run(event.run_id)
                            assert info.status == "completed", "the reader got the end first"
    finally:
        await reader.close()
        await journal.close()


async def test_a_streamed_run_the_team_stops_under_still_gets_its_last_event(
    tmp_path: Path,
) -> None:
    started = anyio.Event()

    async def stuck(request: ModelRequest) -> ModelResponse:
        if request.role == "worker":
            started.set()
            await anyio.sleep_forever()
        return _brain(request)

    model = ScriptedModel(stuck)
    team = Team(
        name="stoppers",
        planner=Planner(model=model),
        workers=[Worker(name="clerk", description="Waits.", model=model)],
    )
    journal = await open_journal(str(tmp_path / "runs.db"))
    seen: list[object] = []
    try:
        async with anyio.create_task_group() as tg, team.start(journal=journal) as running:

            async def read() -> None:
                async with running.stream("wait") as events:
                    seen.extend([event async for event in events])

            tg.start_soon(read)
            await started.wait()  # the team block ends under the run: its reader must end
        (info,) = await journal.list_runs()
    finally:
        await journal.close()
    assert isinstance(seen[-1], RunFailed)
    assert info.status == "cancelled"
