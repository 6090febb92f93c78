"""A run whose process lives on but cannot journal a step's report (the step's dispatch,
with its span id, is journaled) must not leave that span to be sent twice: ended by the
live process as the step finished, and ended again, as interrupted, by the resume that
finds the dispatch without a report.

A real failure (another connection holds the SQLite file's write lock past the journal's
``busy_timeout``), the real OTLP exporter to a loopback receiver.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from regiment.errors import JournalError
from regiment.hierarchy import Planner, Team, Worker
from regiment.journal import SqliteJournal, StepDispatched
from regiment.models import ModelRequest, ScriptedModel, ToolResultPart
from regiment.telemetry import Telemetry, configure_tracing

from ..hierarchy.brains import Brain, plan_json
from .otlp_receiver import OtlpReceiver

pytestmark = pytest.mark.anyio

PLAN = plan_json(
    {"id": "a", "description": "first"},
    {"id": "b", "description": "second", "depends_on": ["a"]},
)


def _dispatched(path: Path) -> bool:
    """Whether the journal file holds a step's dispatch (read as another program would)."""
    with sqlite3.connect(path) as reader:
        query = "SELECT count(*) FROM journal_records WHERE kind = 'step_dispatched'"
        ((count,),) = reader.execute(query).fetchall()
    return bool(count)


async def test_a_step_whose_report_could_not_be_journaled_has_its_span_sent_once(
    tmp_path: Path,
) -> None:
    path = tmp_path / "runs.db"
    journal = await SqliteJournal.open(path, busy_timeout=0.05)
    blocker = sqlite3.connect(path, isolation_level=None)
    locked: list[bool] = []

    async def work(description: str, results: list[ToolResultPart], request: ModelRequest) -> str:
        if description == "first" and not locked:
            await journal.flush()  # the step's dispatch is committed (the run's heartbeat
            assert _dispatched(path)  # would within COMMIT_WAIT), its report never is
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
                with pytest.raises(JournalError):
                    await running.run("do two things")
                tracing.force_flush()
                blocker.execute("ROLLBACK")
                (listed,) = await journal.list_runs()
                entries = await journal.read(listed.run_id)
                resumed = await running.resume(listed.run_id)
        finally:
            blocker.close()
            await journal.close()
            tracing.shutdown()
        spans = receiver.spans()
    assert resumed.status == "completed"
    sent = [e.record.span for e in entries if isinstance(e.record, StepDispatched)]
    assert len(sent) == 1  # a's dispatch was journaled, with its span id
    (a_span,) = sent
    (a,) = [s for s in spans if s.span_id == a_span]  # sent once: by the resume
    assert a.attributes["regiment.interrupted"] is True
    ids = [s.span_id for s in spans]
    assert [i for i in set(ids) if ids.count(i) > 1] == []  # no span sent twice
    assert [s.name for s in spans if s.parent_span_id not in {None, *ids}] == []
