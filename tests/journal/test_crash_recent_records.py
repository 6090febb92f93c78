"""A run's records reach the journal while it works, not only at its next durable write.

Records written without ``durable`` (model replies, reports, plan versions, events) wait
in the journal's buffer for a commit; a ``kill -9`` loses what is still there. They were
committed only with the next durable record (a tool call's intent or result, a pause,
the end) or the lease's renewal (every ``lease_ttl / 3``): a run killed while its
synthesis call ran (the torture's kill held at the synthesizer, 3 s in) had lost the
last step's second model reply, its report, the critique and every event since the last
tool result, so the resume asked the model for them again, though README promised they
survive a crash of the process. The run's heartbeat now commits what waits every second.
The child runs with a 300 s lease (renewed every 100 s), so only that commit can bring
them in while it waits here.
"""

from __future__ import annotations

import time
from pathlib import Path

import anyio
import pytest

from regiment import ScriptedModel
from regiment.journal import EventRecorded, StepReported, open_journal

from .durable_team import Ledger, make_team
from .test_crash_resume import stopped_child

pytestmark = pytest.mark.anyio


async def _events(where: str, run_id: str) -> list[str]:
    journal = await open_journal(where)
    try:
        entries = await journal.read(run_id)
    finally:
        await journal.close()
    return [e.record.kind for e in entries if isinstance(e.record, EventRecorded)]


@pytest.mark.parametrize(
    ("anyio_backend", "kind"), [("asyncio", "sqlite"), ("trio", "postgres")], indirect=False
)
async def test_a_waiting_runs_records_are_committed_and_survive_its_kill(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    if kind == "sqlite":
        where = str(tmp_path / "runs.db")
    else:
        where = str(request.getfixturevalue("postgres_url"))
    folder = tmp_path / "crashed"
    async with stopped_child(where, folder, "synthesis", "ttl=300") as (run_id, process):
        with anyio.fail_after(20):  # the lease's own renewal would come in 100 s
            for _ in iter(int, 1):  # polls another process's journal: no event to wait on
                if "SynthesisStarted" in await _events(where, run_id):
                    break
                await anyio.sleep(0.05)
        process.kill()
    journal = await open_journal(where, clock=lambda: time.time() + 301)
    try:
        entries = await journal.read(run_id)
        reports = [e.record.step_id for e in entries if isinstance(e.record, StepReported)]
        assert reports == ["s1", "s2", "s3", "s4"]  # s3 failed its check; the replan's s4
        team = make_team()
        async with team.start(journal=journal) as running:
            result = await running.resume(run_id, deps=Ledger(folder))
    finally:
        await journal.close()
    assert result.status == "completed"
    model = team.planner.model
    assert isinstance(model, ScriptedModel)
    assert [r.role for r in model.requests] == ["synthesizer"]  # nothing else asked again
