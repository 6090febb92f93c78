"""A long-lived started team whose journal fails now and then keeps nothing of the runs
that failed on it but their leases' small entries (a resume through it lets go of them).

The journal kept each failed lease's error until the journal closed, and with it the
traceback of every raise of that error: the frames of the commit and of the run's
flush, and what they held (the run's encoded records). A real failure: another
connection holds the SQLite file's write lock past the journal's ``busy_timeout``.
"""

from __future__ import annotations

import gc
import sqlite3
from pathlib import Path

import pytest

from regiment.errors import JournalError
from regiment.hierarchy import Planner, Team, Worker
from regiment.journal import SqliteJournal
from regiment.journal._store import Pending
from regiment.models import ModelRequest, ScriptedModel, ToolResultPart
from regiment.telemetry import SpanCollector, Telemetry

from ..hierarchy.brains import Brain, plan_json

pytestmark = pytest.mark.anyio

PLAN = plan_json(
    {"id": "a", "description": "first"},
    {"id": "b", "description": "second", "depends_on": ["a"]},
)
RUNS = 8


def _alive(kind: type) -> int:
    gc.collect()
    return sum(isinstance(o, kind) for o in gc.get_objects())


async def test_runs_failed_by_the_journal_leave_none_of_their_records_behind(
    tmp_path: Path,
) -> None:
    from opentelemetry.sdk.trace import TracerProvider

    path = tmp_path / "runs.db"
    journal = await SqliteJournal.open(path, busy_timeout=0.02)
    blocker = sqlite3.connect(path, isolation_level=None)

    async def work(description: str, results: list[ToolResultPart], request: ModelRequest) -> str:
        if description == "first":
            await journal.flush()  # its dispatch is committed, its report never is
            blocker.execute("BEGIN EXCLUSIVE")  # another program holds the file too long
        return f"did: {description}"

    model = ScriptedModel(Brain([PLAN] * RUNS, work=work), keep_requests=0)
    provider = TracerProvider(shutdown_on_exit=False)
    provider.add_span_processor(SpanCollector())
    team = Team(
        name="t",
        planner=Planner(model=model),
        workers=[Worker(name="w", description="does things", model=model)],
        telemetry=Telemetry(provider),
    )
    failed = []
    try:
        async with team.start(journal=journal) as running:
            for _ in range(RUNS):
                with pytest.raises(JournalError, match="could not be journaled") as raised:
                    await running.run("do two things")
                failed.append(str(raised.value))
                blocker.execute("ROLLBACK")
                del raised
            await journal.flush()
            pending = _alive(Pending)
    finally:
        blocker.close()
        await journal.close()
        provider.shutdown()
    assert len(failed) == RUNS
    assert pending == 0  # every commit is done: none of the runs' records is still held
