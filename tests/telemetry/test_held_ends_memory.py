"""What a long-lived traced team keeps of its journaled runs: no held step span once the
runs are over, whichever way they ended (done, a failed step, cancelled by the caller, or
failed by the journal with their steps' reports not written), and nothing of a step span
told to be dropped before it ever started (a step cut while queued never starts its span:
the entry waited for an end that never came).

Nor any record of the runs the journal failed: it kept each failed lease's error (for
the run's resume) with the traceback of every raise of it, the frames of the commit and
of the run's flush, and what they held (the run's encoded records). A real failure:
another connection holds the SQLite file's write lock past the journal's ``busy_timeout``.
"""

from __future__ import annotations

import gc
import sqlite3
from pathlib import Path

import anyio
import pytest
from opentelemetry.sdk.trace import TracerProvider

from regiment.errors import JournalError, StepFailed
from regiment.hierarchy import Planner, Team, Worker
from regiment.journal import SqliteJournal
from regiment.journal._store import Pending
from regiment.models import ModelRequest, ScriptedModel
from regiment.telemetry import SpanCollector, Telemetry, step_ends, step_span_headers

from ..hierarchy.brains import plan_json, step_of

pytestmark = pytest.mark.anyio

PLAN = plan_json(
    {"id": "a", "description": "first"},
    {"id": "b", "description": "second", "depends_on": ["a"]},
)
KINDS = ("done", "failing", "cancelled", "unjournaled") * 3


def _collected() -> tuple[TracerProvider, SpanCollector]:
    collector = SpanCollector()
    provider = TracerProvider(shutdown_on_exit=False)
    provider.add_span_processor(collector)
    return provider, collector


async def test_a_long_lived_team_holds_no_step_span_once_its_runs_are_over(
    tmp_path: Path,
) -> None:
    path = tmp_path / "runs.db"
    journal = await SqliteJournal.open(path, busy_timeout=0.02)
    blocker = sqlite3.connect(path, isolation_level=None)
    kind, started = "done", anyio.Event()

    async def brain(request: ModelRequest) -> str:
        if request.role in ("planner", "replanner"):
            return PLAN
        if request.role == "synthesizer":
            return "answer"
        _, description = step_of(request)
        if kind == "failing" and description == "second":
            raise ValueError("the step's tool broke")
        if kind == "cancelled" and description == "second":
            started.set()
            await anyio.sleep_forever()
        if kind == "unjournaled" and description == "first":
            await journal.flush()  # its dispatch is committed, its report never is
            blocker.execute("BEGIN EXCLUSIVE")
        return f"did: {description}"

    model = ScriptedModel(brain, keep_requests=0)
    provider, collector = _collected()
    telemetry = Telemetry(provider)
    team = Team(
        name="t",
        planner=Planner(model=model),
        workers=[Worker(name="w", description="does things", model=model)],
        telemetry=telemetry,
    )
    ends, kept = step_ends(telemetry), []
    try:
        async with team.start(journal=journal) as running:
            for kind in KINDS:
                started = anyio.Event()
                if kind == "done":
                    await running.run("two things")
                elif kind == "failing":
                    with pytest.raises(StepFailed):
                        await running.run("two things")
                elif kind == "cancelled":
                    with anyio.CancelScope() as scope:
                        async with anyio.create_task_group() as tg:
                            tg.start_soon(running.run, "two things")
                            await started.wait()
                            scope.cancel()
                else:
                    with pytest.raises(JournalError):
                        await running.run("two things")
                    blocker.execute("ROLLBACK")
                await journal.flush()
                kept.append(len(ends))
            gc.collect()
            records = sum(isinstance(o, Pending) for o in gc.get_objects())
    finally:
        blocker.close()
        await journal.close()
        provider.shutdown()
    assert kept == [0] * len(KINDS)
    assert records == 0  # every commit is done: no run's records are held (36 on main)
    assert collector.spans()  # (traced: its step spans went through)


def test_a_step_span_dropped_before_it_started_is_not_kept() -> None:
    provider, collector = _collected()
    telemetry = Telemetry(provider)
    ends = step_ends(telemetry)
    never, cut = step_span_headers({}), step_span_headers({})
    for span_id, _ in (never, cut):
        ends.expect(span_id)
    with telemetry.agent_span("w", parent_headers=cut[1]):
        ends.drop([never[0], cut[0]])  # (``never`` is cut while queued: it never starts)
        assert len(ends) == 1  # ``cut`` ends after: dropped as it ends
    assert len(ends) == 0
    assert collector.spans() == ()  # neither was exported: the resume ends them
