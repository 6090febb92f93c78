"""Resume in one process: worker-side journaling, the errors a resume gives, random kill points.

A kill here is what ``kill -9`` leaves behind, made in-process: at the stop
point the test copies the SQLite file with SQLite's backup API (committed
transactions only: buffered records are lost, as in a crash) and the tool's
ledger files, then cancels the live run, whose later writes go to the original
file. The resume runs on the copy. The subprocess version of the same story is
``test_crash_resume.py``.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from regiment import Guardrail, Pass, Planner, RunContext, ScriptedModel, Team, Worker, tool
from regiment.errors import ConfigError, JournalError
from regiment.hierarchy import RunStarted
from regiment.hierarchy.run._config_hash import config_hash
from regiment.hierarchy.run._journaling import LEASE_TTL
from regiment.journal import (
    ModelCallFinished,
    RunResumed,
    SqliteJournal,
    ToolCallFinished,
    ToolCallStarted,
    open_journal,
)
from regiment.models import ModelRequest, ModelResponse, ToolResultPart, tool_call_response

from .durable_team import GOAL, Ledger, Stop, check_resumed, make_team, stopper

pytestmark = pytest.mark.anyio


# -- worker-side journaling -----------------------------------------------------------


async def test_a_tool_call_intent_is_durable_before_the_body_runs(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    seen: list[tuple[str, list[str]]] = []

    @tool
    async def probe(n: int, ctx: RunContext[str]) -> str:
        """Read the journal from another connection while the call runs."""
        other = await SqliteJournal.open(path)
        try:
            records = [e.record for e in await other.read(ctx.run_id)]
        finally:
            await other.close()
        kinds = [type(r).__name__ for r in records]
        seen.append((ctx.idempotency_key, kinds))
        intent = records[-1]
        assert isinstance(intent, ToolCallStarted)
        assert (intent.idempotency_key, intent.arguments, intent.call_index) == (
            ctx.idempotency_key,
            {"n": n},
            0,
        )
        return f"{ctx.deps}:{ctx.worker}:{ctx.step_id}:{ctx.plan_version}:{n}"

    async def brain(request: ModelRequest) -> ModelResponse | str:
        if request.role == "planner":
            return json.dumps({"steps": [{"id": "s1", "description": "probe"}]})
        if request.role == "worker":
            last = request.messages[-1].parts
            results = [p for p in last if isinstance(p, ToolResultPart)]
            return str(results[0].content) if results else tool_call_response("probe", {"n": 4})
        return "answer"

    model = ScriptedModel(brain)
    team = Team(
        name="probing",
        planner=Planner(model=model),
        workers=[Worker(name="w", description="probes", model=model, tools=[probe])],
    )
    async with team.start(journal=path) as running:
        result = await running.run("probe once", deps="db-1")
    run_id = result.run_id
    assert result.steps[0].output == "db-1:w:s1:1:4"
    assert seen == [(f"{run_id}/v1/s1/0", seen[0][1])]
    journal = await SqliteJournal.open(path)
    try:
        records = [e.record for e in await journal.read(run_id)]
    finally:
        await journal.close()
    finished = [r for r in records if isinstance(r, ToolCallFinished)]
    assert [(r.step_id, r.call_index, r.result.content) for r in finished] == [
        ("s1", 0, "db-1:w:s1:1:4")
    ]
    keys = [r.call_key for r in records if isinstance(r, ModelCallFinished)]
    assert keys[:3] == ["plan/1", "step/1/s1/1", "step/1/s1/2"]
    worker = [r for r in records if isinstance(r, ModelCallFinished) and r.call_key[:4] == "step"]
    assert all(r.response.usage.total_tokens > 0 for r in worker)


# -- what a resume refuses ----------------------------------------------------------------


async def _stalled(tmp_path: Path, stop_at: str = "model:s2:1") -> tuple[Path, str, Ledger]:
    """A run killed at ``stop_at``: a copy of its journal as a crash leaves it."""
    folder = tmp_path / "ledger"
    folder.mkdir()
    copy = tmp_path / "crashed.db"
    run_id, _ = await _crash(make_team, tmp_path / "live.db", copy, folder, stop_at)
    return copy, run_id, Ledger(folder)


async def _late(path: Path) -> SqliteJournal:
    """The journal with a clock a lease's length ahead: the dead owner's lease has expired."""
    return await SqliteJournal.open(path, clock=lambda: time.time() + LEASE_TTL + 1)


async def test_an_unknown_run_is_a_clear_error(tmp_path: Path) -> None:
    copy, _, ledger = await _stalled(tmp_path)
    async with make_team().start(journal=copy) as running:
        with pytest.raises(JournalError, match=r"no run 'run-nope'.*regiment runs"):
            await running.resume("run-nope", deps=ledger)


async def test_a_finished_run_is_not_resumed(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    folder = tmp_path / "ledger"
    folder.mkdir()
    async with make_team().start(journal=path) as running:
        result = await running.run(GOAL, deps=Ledger(folder))
        with pytest.raises(JournalError, match="already finished"):
            await running.resume(result.run_id, deps=Ledger(folder))


async def test_a_changed_team_is_refused_unless_forced(tmp_path: Path) -> None:
    copy, run_id, ledger = await _stalled(tmp_path)
    journal = await _late(copy)
    try:
        async with make_team(concurrency=2).start(journal=journal) as running:
            with pytest.raises(ConfigError, match=r"differently configured.*force=True"):
                await running.resume(run_id, deps=ledger)
            result = await running.resume(run_id, deps=ledger, force=True)
        assert result.status == "completed"
    finally:
        await journal.close()


def _gated(team: Team, **changes: Any) -> Team:
    worker = team.workers[0]
    assert isinstance(worker, Worker)
    return replace(team, workers=[replace(worker, tools=worker.tools, **changes)])


def _checked(subject: object) -> Pass:
    return Pass()


def test_what_may_run_unasked_is_part_of_the_team_a_resume_checks() -> None:
    # A run paused for an approval must not resume under a team that would run the
    # call unasked, or with fewer guards: each of these is a different configuration.
    team = make_team()
    gated = _gated(team, require_approval=["charge"])
    variants = [
        team,
        gated,
        _gated(team, require_approval=["charge"], approval_timeout=60.0),
        _gated(team, guardrails=[Guardrail(_checked, kind="tool_call")]),
        _gated(team, tool_guardrails={"charge": [Guardrail(_checked, kind="tool_call")]}),
        replace(team, guardrails=[Guardrail(_checked, kind="plan")]),
    ]
    hashes = [config_hash(t) for t in variants]
    assert len(set(hashes)) == len(hashes)
    assert config_hash(_gated(team, require_approval=["charge"])) == hashes[1]  # stable


async def test_resume_needs_a_journal() -> None:
    async with make_team().start() as running:
        with pytest.raises(ConfigError, match=r"Team.start\(journal=...\)"):
            await running.resume("run-1")


async def test_a_run_whose_lease_is_taken_fails_with_a_journal_error(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    folder = tmp_path / "ledger"
    folder.mkdir()
    thief = await _late(path)
    stolen = anyio.Event()

    async def steal(where: str) -> None:
        if where == "tool:s1":  # another process takes the run over mid-run
            info = await thief.list_runs()
            await thief.acquire(info[0].run_id, owner="thief", ttl=60)
            stolen.set()

    try:
        async with make_team(steal).start(journal=path) as running:
            with pytest.raises(
                JournalError, match=r"taken over by another process, 'thief'"
            ) as caught:
                await running.run(GOAL, deps=Ledger(folder))
        # The old owner is told the run is someone else's now, not to resume it.
        assert "was taken over by another process" in str(caught.value)
        assert "the new owner finishes it" in str(caught.value)
    finally:
        await thief.close()
    assert stolen.is_set()
    assert len(Ledger(folder).lines(Ledger(folder).effects)) == 1  # s2 never started


# -- random kill points ---------------------------------------------------------------


def _snapshot(live: Path, copy: Path, folder: Path, saved: Path) -> None:
    with sqlite3.connect(live) as source, sqlite3.connect(copy) as target:
        source.backup(target)
    source.close()
    target.close()
    shutil.copytree(folder, saved)


async def _crash(
    factory: object, live: Path, copy: Path, folder: Path, stop_at: str
) -> tuple[str, Path]:
    """Run until ``stop_at``, snapshot what a kill would leave, cancel the rest."""
    saved = folder.with_name(folder.name + "-at-kill")
    reached = anyio.Event()
    run_ids: list[str] = []

    async def ready(where: str) -> None:
        _snapshot(live, copy, folder, saved)
        reached.set()

    assert callable(factory)
    team: Team = factory(stopper(stop_at, ready))

    async def run() -> None:
        async with running.stream(GOAL, deps=Ledger(folder)) as events:
            async for event in events:
                if isinstance(event, RunStarted):
                    run_ids.append(event.run_id)

    async with team.start(journal=live) as running, anyio.create_task_group() as tg:
        tg.start_soon(run)
        await reached.wait()
        tg.cancel_scope.cancel()
    shutil.rmtree(folder)
    saved.rename(folder)
    return run_ids[0], saved


def _plan(amounts: list[int], chain: bool, check_last: bool) -> str:
    steps: list[dict[str, object]] = []
    for i, amount in enumerate(amounts, 1):
        step: dict[str, object] = {"id": f"s{i}", "description": f"charge a{i} {amount}"}
        if chain and i > 1:
            step["depends_on"] = [f"s{i - 1}"]
        if check_last and i == len(amounts):
            step["check"] = "never"
            # After every other step: a replan drops the old version's steps still in
            # flight, so a check that fails earlier makes the answer depend on timing.
            if i > 1:
                step["depends_on"] = [f"s{j}" for j in range(1, i)]
        steps.append(step)
    return json.dumps({"steps": steps})


_REPLAN = json.dumps({"steps": [{"id": "s9", "description": "charge z9 9"}]})


@st.composite
def _runs(draw: st.DrawFn) -> tuple[str, bool, int, str]:
    amounts = draw(st.lists(st.integers(1, 99), min_size=1, max_size=4))
    chain = draw(st.booleans())
    replans = draw(st.booleans())
    plan = _plan(amounts, chain, replans)
    ids = [f"s{i}" for i in range(1, len(amounts) + 1)] + (["s9"] if replans else [])
    points = ["plan", "synthesis", *(["replan"] if replans else [])]
    for step in ids:
        points += [f"model:{step}:1", f"tool:{step}", f"model:{step}:2"]
    return plan, replans, draw(st.integers(1, 3)), draw(st.sampled_from(points))


def _in_flight(records: list[object]) -> set[str]:
    started = {
        (r.plan_version, r.step_id, r.call_index): r.idempotency_key
        for r in records
        if isinstance(r, ToolCallStarted)
    }
    for r in records:
        if isinstance(r, ToolCallFinished):
            started.pop((r.plan_version, r.step_id, r.call_index), None)
    return set(started.values())


@pytest.mark.timeout(300)
@settings(
    max_examples=100,  # per anyio backend: the 200 kill-and-resume runs the issue asks for
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(case=_runs())
async def test_random_kill_points_never_repeat_a_side_effect(
    case: tuple[str, bool, int, str], tmp_path_factory: pytest.TempPathFactory
) -> None:
    plan, _, concurrency, stop_at = case
    tmp = tmp_path_factory.mktemp("kill")
    for sub in ("baseline", "ledger"):
        (tmp / sub).mkdir()

    def factory(stop: Stop = _go_on_stop) -> Team:
        return make_team(stop, plan=plan, replan=_REPLAN, concurrency=concurrency)

    async with factory().start() as running:
        baseline = await running.run(GOAL, deps=Ledger(tmp / "baseline"))
    copy = tmp / "crashed.db"
    run_id, _ = await _crash(factory, tmp / "live.db", copy, tmp / "ledger", stop_at)
    journal = await _late(copy)
    try:
        in_flight = _in_flight([e.record for e in await journal.read(run_id)])
        async with factory().start(journal=journal) as running:
            result = await running.resume(run_id, deps=Ledger(tmp / "ledger"))
    finally:
        await journal.close()
    check_resumed(
        answer=result.answer,
        baseline_answer=baseline.answer,
        ledger=Ledger(tmp / "ledger"),
        baseline=Ledger(tmp / "baseline"),
        run_id=run_id,
        stop_at=stop_at,
        in_flight=in_flight,
    )


async def _go_on_stop(where: str) -> None:
    return None


async def test_a_long_run_keeps_its_lease_alive_with_a_heartbeat(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    folder = tmp_path / "ledger"
    folder.mkdir()
    seen: list[str] = []

    async def slow(where: str) -> None:
        if where == "tool:s1":  # a tool call that takes several lease lengths
            await anyio.sleep(2.5)
            other = await SqliteJournal.open(path)
            try:
                seen.extend(info.status for info in await other.list_runs())
            finally:
                await other.close()

    async with make_team(slow).start(journal=path, lease_ttl=1.0) as running:
        result = await running.run(GOAL, deps=Ledger(folder))
    assert result.status == "completed"
    assert seen == ["running"]  # without the heartbeat the lease would have run out: stalled


async def test_lease_ttl_must_be_positive() -> None:
    with pytest.raises(ConfigError, match="lease_ttl"):
        async with make_team().start(lease_ttl=0):
            pass


async def test_a_resume_killed_as_it_runs_still_counts_as_a_resume(tmp_path: Path) -> None:
    # A resume that dies mid-tool must leave its RunResumed behind: the next resume
    # numbers itself after it (and its trace links to it).
    copy, run_id, ledger = await _stalled(tmp_path, stop_at="tool:s1")
    second = tmp_path / "killed-again.db"
    reached = anyio.Event()

    async def ready(where: str) -> None:
        with sqlite3.connect(copy) as source, sqlite3.connect(second) as target:
            source.backup(target)  # what a kill leaves now: the committed records
        source.close()
        target.close()
        reached.set()

    journal = await _late(copy)
    try:
        team = make_team(stopper("tool:s1", ready))
        async with team.start(journal=journal) as running, anyio.create_task_group() as tg:

            async def resume() -> None:
                await running.resume(run_id, deps=ledger)

            tg.start_soon(resume)
            await reached.wait()
            tg.cancel_scope.cancel()
    finally:
        await journal.close()
    left = await open_journal(str(second))
    try:
        records = [e.record for e in await left.read(run_id)]
    finally:
        await left.close()
    assert [r.number for r in records if isinstance(r, RunResumed)] == [1]
