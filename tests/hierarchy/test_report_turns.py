"""A step's report is handled in the task of the runner that hands it in (a turn of the
planner's, run as the planner's own): what fails there fails that run, never the worker
that lent its task, nor the other runs it is working for. Such a turn ends with no
``StopIteration`` (issue #22)."""

from __future__ import annotations

import sqlite3
import sys
from pathlib import Path
from types import FrameType

import anyio
import pytest

from regiment.actors import _in_context
from regiment.errors import JournalError
from regiment.hierarchy import Budget, Planner, Team, Worker
from regiment.journal import SqliteJournal
from regiment.models import ModelRequest, ModelResponse, ScriptedModel, ToolResultPart

from .brains import Brain, plan_json

pytestmark = pytest.mark.anyio

_PLANS = {
    "goal A": plan_json({"description": "A: lock the journal, then fail"}),
    "goal B": plan_json({"description": "B: wait for A's end"}),
}


class _PerGoal(Brain):
    async def __call__(self, request: ModelRequest) -> ModelResponse | str:
        if request.role in ("planner", "replanner"):
            text = getattr(request.messages[0].parts[0], "text", "")
            return next(plan for goal, plan in _PLANS.items() if goal in text)
        return await super().__call__(request)


async def test_a_journal_write_failing_in_a_report_turn_fails_that_run_only(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "runs.db"
    blocker = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    b_running, a_over = anyio.Event(), anyio.Event()
    b_work: list[str] = []

    async def work(
        description: str, results: list[ToolResultPart], request: ModelRequest
    ) -> ModelResponse | str:
        if description.startswith("B:"):
            b_running.set()
            try:
                await a_over.wait()
            except anyio.get_cancelled_exc_class():
                b_work.append("cut short")
                raise
            b_work.append("finished")
            return "b done"
        await b_running.wait()
        # Another process holds the file: the run's end (a durable write, made in the
        # turn that handles this step's report, in this runner's task) cannot commit.
        blocker.execute("BEGIN EXCLUSIVE")
        raise RuntimeError("A's step fails; no replans are allowed")

    model = ScriptedModel(_PerGoal([], work=work))
    team = Team(
        name="locked",
        planner=Planner(model=model),
        workers=[Worker(name="w", description="does steps", model=model)],
        budget=Budget(replans=0),
    )
    journal = await SqliteJournal.open(path, busy_timeout=0.05)
    async with team.start(journal=journal) as running, anyio.create_task_group() as tg:

        async def run_b() -> None:
            # The journal's writer batches every run's records: B's, written while
            # the file was locked, are lost with A's, so B is not durable either.
            with pytest.raises(JournalError, match="database is locked"):
                await running.run("goal B")

        tg.start_soon(run_b)
        with pytest.raises(JournalError, match="database is locked"):
            await running.run("goal A")
        blocker.execute("ROLLBACK")
        blocker.close()
        a_over.set()
    # B's step, in flight on the same worker all along, was not cut short: the
    # worker whose runner task A's failing turn ran in did not fail with it.
    assert b_work == ["finished"]
    # A's planner had stopped (its run was over) when the write failed: logged, not lost.
    (late,) = [r for r in caplog.records if "after it had stopped" in r.getMessage()]
    assert late.levelname == "ERROR"
    assert "handling StepReport" in late.getMessage()
    assert "database is locked" in late.getMessage()


async def test_a_report_turn_ends_with_no_stop_iteration() -> None:
    # in_context ended each turn with a StopIteration (~1.6k CPU instructions a step);
    # ContextTurns' runner takes the turn's end by await. By the profiler: calls from
    # the module's frames that ended in an exception, in a 1-step and a 4-step run.
    raised: list[int] = []

    def profiler(frame: FrameType, event: str, arg: object) -> None:
        if event == "c_exception" and frame.f_code.co_filename == _in_context.__file__:
            raised[-1] += 1

    steps = [{"id": f"s{i}", "description": f"part {i}"} for i in range(1, 5)]
    chained = [step | {"depends_on": [f"s{i}"]} if i else step for i, step in enumerate(steps)]
    worker = ScriptedModel(Brain([]))
    for plan in (plan_json(steps[0]), plan_json(*chained)):
        team = Team(
            name="turns",
            planner=Planner(model=ScriptedModel(Brain([plan] * 2))),
            workers=[Worker(name="w", description="does parts", model=worker)],
        )
        async with team.start() as running:
            assert (await running.run("warm up")).status == "completed"
            raised.append(0)
            sys.setprofile(profiler)
            try:
                result = await running.run("do the parts")
            finally:
                sys.setprofile(None)
        assert result.status == "completed"
    assert len(result.steps) == 4
    assert raised[0] == raised[1]  # none a step: a 4-step run raises as many as a 1-step one
