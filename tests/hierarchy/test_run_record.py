"""Every state change of a run goes through ``PlannerActor._record``, which applies it
to the run's book (``RunBook.apply``; a run with no journal calls that alone): replaying
the changes the book saw into a fresh book rebuilds the same events and the same result.

This is the promise the durable-runs journal builds on, so it is checked on a run
that replans, drops a stale report, and has a check fail.
"""

from __future__ import annotations

from pathlib import Path

import anyio
import msgspec
import pytest
from opentelemetry.trace import INVALID_SPAN

from regiment.hierarchy import (
    Replanned,
    RunCompleted,
    StaleReportDropped,
    StepReport,
    Team,
)
from regiment.hierarchy.run._book import RunBook
from regiment.hierarchy.run._changes import (
    PlanAdopted,
    ReportDropped,
    RunChange,
    RunFinished,
    StepCommitted,
    StepSent,
)
from regiment.hierarchy.run._channel import RunChannel
from regiment.hierarchy.run._dispatch import Dispatcher
from regiment.hierarchy.run._runtime import TeamRuntime
from regiment.hierarchy.run._trace import RunTrace
from regiment.journal import PlanVersion, SqliteJournal, StepReported
from regiment.models import ModelRequest, ToolResultPart
from regiment.telemetry import Telemetry

from .brains import Brain, plan_json
from .replan_team import PROBE, RECOVER, probe_after_slow, replan_team

pytestmark = pytest.mark.anyio

GOAL = "goal"


def _never_ok(report: StepReport) -> bool:
    return False


def _team(replanned: anyio.Event, dropped: anyio.Event) -> Team:
    async def work(description: str, results: list[ToolResultPart], request: ModelRequest) -> str:
        if description == "recover":
            # The new version's step waits until the stale report was dropped, so the
            # run never ends before it arrives (a streamed run's reader lags behind).
            await dropped.wait()
        if description == "slow draft":
            # A model call already on the wire: it finishes after the replan, and its
            # report is stale by then.
            with anyio.CancelScope(shield=True):
                await replanned.wait()
            return "SLOW-DRAFT-OUTPUT"
        return f"did: {description}"

    v1 = plan_json(
        PROBE,
        {"id": "s2", "description": "slow draft"},
        {"id": "s3", "description": "use draft", "depends_on": ["s2"]},
    )
    return replan_team(Brain([v1, RECOVER], work=probe_after_slow(work)))


def _fresh_book(team: Team, run_id: str) -> RunBook:
    telemetry = Telemetry()
    runtime = TeamRuntime(
        name=team.name,
        planner=team.planner,
        workers={w.name: w for w in team.workers},
        worker_refs={},  # a replay sends nothing
        checks=team.checks,
        budget=team.budget,
        concurrency=team.concurrency,
        critic=team.critic,
        compression=team.compression,
        telemetry=telemetry,
    )
    channel, events = RunChannel.open(streaming=False)
    events.close()  # a replay has no reader
    trace = RunTrace(telemetry, INVALID_SPAN)
    return RunBook(run_id, GOAL, runtime, channel, trace, Dispatcher(runtime, run_id, {}))


async def test_replaying_the_recorded_changes_rebuilds_the_run(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    recorded: list[RunChange] = []
    apply = RunBook.apply

    def journal(book: RunBook, change: RunChange) -> None:
        recorded.append(change)  # what a journal would append, before applying
        apply(book, change)

    monkeypatch.setattr(RunBook, "apply", journal)
    replanned, dropped = anyio.Event(), anyio.Event()
    team = _team(replanned, dropped)
    async with team.start() as running, running.stream(GOAL) as stream:
        async for event in stream:
            if isinstance(event, Replanned):
                replanned.set()
            elif isinstance(event, StaleReportDropped):
                dropped.set()
    assert isinstance(event, RunCompleted)
    result = event.result

    kinds = [type(c) for c in recorded]
    assert kinds.count(PlanAdopted) == 2
    assert ReportDropped in kinds
    assert kinds.count(StepSent) == 3  # s1 and s2 of v1 (s3 waits for s2), s4 of v2
    assert StepCommitted in kinds
    assert kinds[-1] is RunFinished
    assert any(isinstance(e, Replanned) for e in result.events)
    assert any(isinstance(e, StaleReportDropped) for e in result.events)

    book = _fresh_book(team, result.run_id)
    for change in recorded:
        apply(book, change)  # not the spy: it would record them again
    replayed = book.channel.result
    assert replayed is not None
    assert msgspec.to_builtins(replayed) == msgspec.to_builtins(result)
    assert isinstance(book.events[-1], RunCompleted)
    assert book.events[:-1] == list(result.events)


async def test_a_journaled_replan_records_both_versions_and_the_dropped_report(
    tmp_path: Path,
) -> None:
    replanned, dropped = anyio.Event(), anyio.Event()
    team = _team(replanned, dropped)
    path = tmp_path / "runs.db"
    async with team.start(journal=path) as running, running.stream(GOAL) as stream:
        async for event in stream:
            if isinstance(event, Replanned):
                replanned.set()
            elif isinstance(event, StaleReportDropped):
                dropped.set()
    assert isinstance(event, RunCompleted)
    journal = await SqliteJournal.open(path)
    try:
        records = [entry.record for entry in await journal.read(event.run_id)]
    finally:
        await journal.close()
    versions = [r for r in records if isinstance(r, PlanVersion)]
    assert [v.version for v in versions] == [1, 2]
    assert versions[1].plan["parent_version"] == 1
    reported = {(r.plan_version, r.step_id): r for r in records if isinstance(r, StepReported)}
    assert not reported[(1, "s1")].committed  # its check failed
    assert not reported[(1, "s2")].committed  # stale: dropped after the replan
    assert reported[(1, "s2")].output == "SLOW-DRAFT-OUTPUT"
    assert any(r.committed for (version, _), r in reported.items() if version == 2)
