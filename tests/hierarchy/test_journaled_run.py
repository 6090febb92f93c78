"""``Team.start(journal=...)``: every state change of a run lands in the journal, in order.

Real journals only: a SQLite file and the in-memory backend, on asyncio and trio.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import msgspec
import pytest

from regiment.errors import JournalError
from regiment.hierarchy import Planner, RunCompleted, Team, Worker
from regiment.hierarchy.events import Event
from regiment.journal import (
    EventRecorded,
    MemoryJournal,
    ModelCallFinished,
    PlanVersion,
    RunCreated,
    RunFinished,
    SqliteJournal,
    StepDispatched,
    StepReported,
)
from regiment.models import ModelRequest, ScriptedModel, ToolResultPart

from .brains import Brain, plan_json

pytestmark = pytest.mark.anyio

PLAN = plan_json({"id": "a", "description": "first"}, {"id": "b", "description": "second"})


def _as_json(value: object) -> object:
    return msgspec.json.decode(msgspec.json.encode(value))


def _team() -> Team:
    model = ScriptedModel(Brain([PLAN]))
    return Team(
        name="journaled",
        planner=Planner(model=model),
        workers=[Worker(name="w", description="does things", model=model)],
    )


async def test_a_run_journals_its_changes_events_and_result(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    seen: list[Event] = []
    async with (
        _team().start(journal=path) as running,
        running.stream("do two things", session="ticket-1") as events,
    ):
        seen.extend([e async for e in events])
    last = seen[-1]
    assert isinstance(last, RunCompleted)
    run_id = last.run_id
    journal = await SqliteJournal.open(path)
    try:
        records = [entry.record for entry in await journal.read(run_id)]
        info = await journal.get_run(run_id)
    finally:
        await journal.close()
    created = records[0]
    assert isinstance(created, RunCreated)
    assert (created.team, created.goal, created.session) == (
        "journaled",
        "do two things",
        "ticket-1",
    )
    assert len(created.config_hash) == 32
    assert [r.version for r in records if isinstance(r, PlanVersion)] == [1]
    assert sorted(r.step_id for r in records if isinstance(r, StepDispatched)) == ["a", "b"]
    reported = [r for r in records if isinstance(r, StepReported)]
    assert sorted((r.step_id, r.committed, r.output) for r in reported) == [
        ("a", True, "did: first"),
        ("b", True, "did: second"),
    ]
    keys = [r.call_key for r in records if isinstance(r, ModelCallFinished)]
    assert keys[0] == "plan/1"
    assert all(r.response.usage is not None for r in records if isinstance(r, ModelCallFinished))
    journaled_events = [r for r in records if isinstance(r, EventRecorded)]
    # Every event but the live ones (text deltas, tool calls as they go) is journaled.
    live = {"TextDelta", "ToolCallStarted", "ToolCallFinished"}
    assert any(type(e).__name__ in live for e in seen)
    state = [type(e).__name__ for e in seen if type(e).__name__ not in live]
    assert [r.kind for r in journaled_events] == state
    assert journaled_events[-1].event == _as_json(last)
    finished = records[-1]
    assert isinstance(finished, RunFinished)
    assert (finished.status, finished.answer) == ("completed", last.result.answer)
    assert finished.result == _as_json(last.result)
    assert info.status == "completed"


async def test_a_journal_object_is_used_and_left_open() -> None:
    journal = MemoryJournal()
    async with _team().start(journal=journal) as running:
        result = await running.run("do two things")
    (info,) = await journal.list_runs()
    assert (info.run_id, info.status) == (result.run_id, "completed")
    records = [e.record for e in await journal.read(result.run_id)]
    assert isinstance(records[-1], RunFinished)
    await journal.close()


async def test_without_a_journal_nothing_is_journaled() -> None:
    async with _team().start() as running:
        assert running.journal is None
        result = await running.run("do two things")
    assert result.status == "completed"


async def test_a_write_failure_fails_the_run_with_a_journal_error(tmp_path: Path) -> None:
    journal = await SqliteJournal.open(tmp_path / "runs.db")
    async with _team().start(journal=journal) as running:
        await journal.close()  # every later write fails
        with pytest.raises(JournalError):
            await running.run("do two things")


async def test_a_write_failing_mid_run_fails_the_run_with_a_journal_error(
    tmp_path: Path,
) -> None:
    journal = await SqliteJournal.open(tmp_path / "runs.db")

    async def work(description: str, results: list[ToolResultPart], request: ModelRequest) -> str:
        if description == "first":
            await journal.close()  # the database goes away under the run
        return f"did: {description}"

    model = ScriptedModel(Brain([PLAN], work=work))
    team = Team(
        name="journaled",
        planner=Planner(model=model),
        workers=[Worker(name="w", description="does things", model=model)],
    )
    async with team.start(journal=journal) as running:
        with pytest.raises(JournalError, match="could not be journaled"):
            await running.run("do two things")


async def test_a_run_the_journal_failed_resumes_in_the_same_process_once_it_works_again(
    tmp_path: Path,
) -> None:
    # A run whose journal write failed keeps its lease (the failed journal is not written
    # to again), so its resume in the same process was refused with 'is running in this
    # process already ...: wait for that run to end', though the run had ended; then,
    # that its lease lapses in 30 s. The journal now lets go of that lease as it hands
    # the run out again (see also tests/journal/test_failed_lease.py).
    path = tmp_path / "runs.db"
    journal = await SqliteJournal.open(path, busy_timeout=0.05)
    blocker = sqlite3.connect(path, isolation_level=None)
    locked: list[bool] = []  # (once: the resume does the step again)

    async def work(description: str, results: list[ToolResultPart], request: ModelRequest) -> str:
        if description == "first" and not locked:
            locked.append(True)
            blocker.execute("BEGIN EXCLUSIVE")  # another program holds the file too long
        return f"did: {description}"

    model = ScriptedModel(Brain([PLAN, PLAN], work=work))  # (the resume plans again)
    team = Team(
        name="journaled",
        planner=Planner(model=model),
        workers=[Worker(name="w", description="does things", model=model)],
    )
    try:
        async with team.start(journal=journal) as running:
            with pytest.raises(JournalError) as failed:
                await running.run("do two things")
            assert "database is locked: another process held the file's write lock" in str(
                failed.value
            )
            said = str(failed.value)  # how to resume, in code and typed anywhere
            assert "resume it (running.resume('run-" in said
            assert f"`regiment resume --journal {path} run-" in said
            blocker.execute("ROLLBACK")
            (listed,) = await journal.list_runs()
            resumed = await running.resume(listed.run_id)
            assert resumed.status == "completed"
    finally:
        blocker.close()
        await journal.close()
