"""A run whose process lives on but cannot journal the run's end leaves its root span open
(not exported): the resume that finishes the run, which the journal tells that span never
ended, ends it with its ids, once. It used to be ended as failed here and sent again by the
resume: the trace held the same span id twice.

A real failure (another connection holds the SQLite file's write lock past the journal's
``busy_timeout``), the real OTLP exporter to a loopback receiver.
"""

from __future__ import annotations

import logging
import sqlite3
from pathlib import Path

import pytest

from regiment.errors import JournalError
from regiment.hierarchy import Planner, Team, Worker
from regiment.journal import RunCreated, SqliteJournal
from regiment.models import ModelRequest, ScriptedModel, ToolResultPart
from regiment.telemetry import Telemetry, configure_tracing

from ..hierarchy.brains import Brain, plan_json
from .otlp_receiver import OtlpReceiver

pytestmark = pytest.mark.anyio

PLAN = plan_json({"id": "a", "description": "first"}, {"id": "b", "description": "second"})


async def test_a_run_whose_end_could_not_be_journaled_leaves_its_root_span_to_the_resume(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "runs.db"
    journal = await SqliteJournal.open(path, busy_timeout=0.05)
    blocker = sqlite3.connect(path, isolation_level=None)
    locked: list[bool] = []

    async def work(description: str, results: list[ToolResultPart], request: ModelRequest) -> str:
        if description == "first" and not locked:
            locked.append(True)
            blocker.execute("BEGIN EXCLUSIVE")  # another program holds the file too long
        return f"did: {description}"

    model = ScriptedModel(Brain([PLAN, PLAN], work=work))
    with OtlpReceiver() as receiver:
        tracing = configure_tracing("unjournaled", endpoint=receiver.endpoint, set_global=False)
        team = Team(
            name="journaled",
            planner=Planner(model=model),
            workers=[Worker(name="w", description="does things", model=model)],
            telemetry=Telemetry(tracing.provider),
        )
        try:
            async with team.start(journal=journal) as running:
                with (
                    caplog.at_level(logging.INFO, "regiment.telemetry"),
                    pytest.raises(JournalError),
                ):
                    await running.run("do two things")
                tracing.force_flush()
                failed = receiver.spans()
                blocker.execute("ROLLBACK")
                (listed,) = await journal.list_runs()
                resumed = await running.resume(listed.run_id)
                created = (await journal.read(listed.run_id))[0].record
        finally:
            blocker.close()
            await journal.close()
            tracing.shutdown()
        spans = receiver.spans()
    assert resumed.status == "completed"
    assert isinstance(created, RunCreated)
    assert created.trace is not None
    root_id = created.trace.split("-")[2]
    # The failed process sent its spans, not the root's, whose end the journal lacks.
    assert failed
    assert root_id in {s.parent_span_id for s in failed}
    assert [s for s in failed if s.parent_span_id is None] == []
    said = [r.getMessage() for r in caplog.records if r.name == "regiment.telemetry"]
    assert [m for m in said if m.startswith(f"run {listed.run_id}: its end could not")]
    # The resume ended it: one root, once, the journaled one, and every parent arrived.
    ids = [s.span_id for s in spans]
    assert sorted(ids) == sorted(set(ids))
    (root,) = [s for s in spans if s.parent_span_id is None]
    assert root.span_id == root_id
    assert root.attributes["regiment.run.status"] == "completed"
    assert [s.name for s in spans if s.parent_span_id not in {None, *ids}] == []
