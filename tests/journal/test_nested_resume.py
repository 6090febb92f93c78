"""A nested team's run is journaled with the run it serves, and resumed with it.

The durable team (``durable_team``) is the one worker of a team ``office``: the office's
one step runs the billing team's whole plan as a nested run. A child process runs it on
a real SQLite file or PostgreSQL server and is SIGKILLed inside the nested run's second
step (after its first committed); the resume in this process finishes the nested run
where it stopped: its first step's tool body does not run again, the call in flight
runs again with the same idempotency key, and the resumed nested run's spans sit under
the resumed run's. The same for a run paused for an approval inside the nested run,
approved, and resumed.
"""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path

import anyio
import pytest
from opentelemetry.sdk.trace import TracerProvider

from regiment.errors import ConfigError, JournalError
from regiment.hierarchy import RunCompleted, TeamWorker
from regiment.hierarchy.run._journaling import LEASE_TTL
from regiment.journal import RunCreated, StepReported, nested_run_id, open_journal
from regiment.models import ScriptedModel
from regiment.telemetry import SpanCollector, Telemetry
from regiment.tools import Approve

from .durable_team import Ledger, make_office
from .test_crash_resume import stopped_child, where

pytestmark = pytest.mark.anyio

__all__ = ("where",)  # the fixture, shared

NESTED_GOAL = "settle the accounts via the desk"


async def test_a_killed_nested_step_resumes_where_it_stopped(where: str, tmp_path: Path) -> None:
    folder = tmp_path / "crashed"
    async with stopped_child(where, folder, "tool:s2", "nested") as (run_id, process):
        process.kill()
        await process.wait()
    ledger = Ledger(folder)
    nested = nested_run_id(run_id, 1, "t1")
    before = ledger.body_runs()
    assert before == {f"{nested}/v1/s1/0": 1, f"{nested}/v1/s2/0": 1}, before

    journal = await open_journal(where, clock=lambda: time.time() + LEASE_TTL + 1)
    try:
        # The nested run is journaled, under the run it serves, and not listed by itself.
        created = (await journal.read(nested))[0].record
        assert isinstance(created, RunCreated)
        assert created.parent == run_id
        assert [info.run_id for info in await journal.list_runs()] == [run_id]
        office = make_office(ledger=ledger)
        async with office.start(journal=journal) as running:
            with pytest.raises(JournalError, match=f"resume '{run_id}'"):
                await running.resume(nested)
            result = await running.resume(run_id)
        nested_status = (await journal.get_run(nested)).status
    finally:
        await journal.close()
    assert result.status == "completed"
    assert nested_status == "completed"
    after = ledger.body_runs()
    # s1 was committed by the nested run: not run again; s2 was in flight: run again
    # with the same key; the rest ran once, under the same nested run.
    assert after[f"{nested}/v1/s1/0"] == 1
    assert after[f"{nested}/v1/s2/0"] == 2
    assert all(key.startswith(f"{nested}/") for key in after), after
    assert all(n == 1 for key, n in after.items() if "/s2/" not in key), after
    effects = [line[0] for line in ledger.lines(ledger.effects)]
    assert len(effects) == len(set(effects)) == len(after)


async def test_a_nested_run_paused_for_approval_resumes_after_the_decision(
    where: str, tmp_path: Path
) -> None:
    ledger = Ledger(tmp_path)
    office = make_office(ledger=ledger, approve="bolt")  # s2 charges bolt
    async with office.start(journal=where) as running:
        async with running.stream(NESTED_GOAL) as events:
            async for event in events:
                if isinstance(event, RunCompleted):
                    paused = event.result
        assert paused.status == "paused"
        (request,) = paused.pending_approvals
        nested = nested_run_id(paused.run_id, 1, "t1")
        assert ledger.body_runs() == {f"{nested}/v1/s1/0": 1}
        await running.approve(request.request_id, Approve(), by="ana")
        with anyio.fail_after(20):
            done = await running.resume(paused.run_id)
    assert done.status == "completed"
    bodies = ledger.body_runs()
    assert bodies[f"{nested}/v1/s1/0"] == 1  # committed before the pause: not again
    assert bodies[f"{nested}/v1/s2/0"] == 1  # approved, then run once
    assert all(n == 1 and key.startswith(f"{nested}/") for key, n in bodies.items()), bodies


async def test_a_nested_run_id_is_refused_by_the_command_line_resume(tmp_path: Path) -> None:
    from regiment.cli._resume import resumable

    db = tmp_path / "runs.db"
    ledger = Ledger(tmp_path)
    async with make_office(ledger=ledger).start(journal=db) as running:
        result = await running.run(NESTED_GOAL)
    journal = await open_journal(str(db))
    try:
        nested = nested_run_id(result.run_id, 1, "t1")
        assert (await journal.get_run(nested)).status == "completed"
        with pytest.raises(ConfigError, match=f"regiment resume {result.run_id}"):
            await resumable(journal, nested, str(db), "")
    finally:
        await journal.close()


async def test_a_resumed_nested_run_is_in_the_resumed_runs_trace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    where = str(tmp_path / "runs.db")
    folder = tmp_path / "crashed"
    monkeypatch.setenv("DURABLE_TEAM_TRACED", "1")
    async with stopped_child(where, folder, "tool:s2", "nested") as (run_id, process):
        process.kill()
        await process.wait()
    journal = await open_journal(where, clock=lambda: time.time() + LEASE_TTL + 1)
    try:
        created = (await journal.read(run_id))[0].record
        assert isinstance(created, RunCreated)
        assert created.trace is not None
        first_trace = created.trace.split("-")[1]
        collector = SpanCollector()
        provider = TracerProvider()
        provider.add_span_processor(collector)
        office = make_office(ledger=Ledger(folder))
        office = dataclasses.replace(office, telemetry=Telemetry(provider))
        async with office.start(journal=journal) as running:
            result = await running.resume(run_id)
    finally:
        await journal.close()
    assert result.status == "completed"
    spans = collector.spans()
    assert {format(s.context.trace_id, "032x") for s in spans} == {first_trace}
    by_id = {s.context.span_id: s for s in spans}
    (top,) = [s for s in spans if s.name == "invoke_agent office"]
    # The nested run's root its killed process left open, ended as interrupted (with the
    # ids its creation journaled), and the resumed nested run's own.
    lost, nested = [s for s in spans if s.name == "invoke_agent billing-desk"]
    assert lost.attributes is not None
    assert lost.attributes["regiment.interrupted"] is True
    assert nested.attributes is not None
    assert nested.attributes["regiment.run.resume"] == 1
    assert nested.attributes["regiment.run.id"] == nested_run_id(run_id, 1, "t1")
    assert not nested.links  # it continues under the step it serves, not its first root
    tools = [s for s in spans if s.name == "execute_tool charge"]
    assert tools  # the call in flight and the steps after it
    for span in (nested, *tools):
        above = span
        while above.parent is not None and above is not top:
            above = by_id[above.parent.span_id]
        assert above is top, span.name


@pytest.mark.parametrize("journaled", [False, True])
async def test_a_nested_teams_tools_get_the_runs_deps(journaled: bool, tmp_path: Path) -> None:
    # They got None: a tool reading ctx.deps failed inside a nested team.
    ledger = Ledger(tmp_path)
    office = make_office()  # no ledger of its own: the tool must find the run's deps
    async with office.start(journal=tmp_path / "runs.db" if journaled else None) as running:
        result = await running.run(NESTED_GOAL, deps=ledger)
    assert result.status == "completed"
    assert len(ledger.body_runs()) == 4  # s1, s2, s3 (its check fails: a replan) and s4


async def test_a_nested_run_that_finished_before_its_step_committed_is_not_redone(
    tmp_path: Path,
) -> None:
    # Killed as the office writes its answer: the nested run had finished (durably), the
    # office's commit of its step was not durable yet. The resume takes the nested run's
    # journaled result; nothing of it runs again.
    where, folder = str(tmp_path / "runs.db"), tmp_path / "crashed"
    async with stopped_child(where, folder, "office:synthesis", "nested") as (run_id, process):
        process.kill()
        await process.wait()
    ledger = Ledger(folder)
    before = ledger.body_runs()
    journal = await open_journal(where, clock=lambda: time.time() + LEASE_TTL + 1)
    try:
        nested = nested_run_id(run_id, 1, "t1")
        assert (await journal.get_run(nested)).status == "completed"
        reports = [e.record for e in await journal.read(run_id)]
        assert not [r for r in reports if isinstance(r, StepReported) and r.committed]
        office = make_office(ledger=ledger)
        async with office.start(journal=journal) as running:
            result = await running.resume(run_id)
    finally:
        await journal.close()
    assert result.status == "completed"
    assert result.steps[0].output  # the nested run's answer, from its journaled result
    assert ledger.body_runs() == before
    desk = office.workers[0]
    assert isinstance(desk, TeamWorker)
    model = desk.team.planner.model
    assert isinstance(model, ScriptedModel)
    assert model.requests == []  # the desk's models were not asked again
