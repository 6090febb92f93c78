"""A Ray-placed worker's own model call that the model refuses, reporting what the
refusal cost (``ModelRefused(usage=...)``), is journaled as answered over the wire, as an
in-process worker's is (tests/journal/test_worker_refused_journal.py): its intent is
closed, and the run resumed after a pause sends the replica the journaled failure
(``StepReplay.asked``), so the step fails again as it did, charged once; before, the
replica took the failed call's empty reply for an answer."""

from __future__ import annotations

import logging
from pathlib import Path
from types import ModuleType

import pytest

from regiment import Approve
from regiment.journal import ModelCallFinished, ModelCallStarted, open_journal
from regiment.models import Usage

from ..journal import refusing_worker_team as team_of

pytestmark = [pytest.mark.anyio, pytest.mark.ray, pytest.mark.timeout(180)]  # Ray starts processes


async def test_a_replicas_refused_call_is_replayed_across_a_pause(
    ray_session: ModuleType, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="regiment")
    asked: list[str] = []
    journal = await open_journal(str(tmp_path / "runs.db"))
    try:
        async with team_of.make_team(asked, on_ray=True).start(journal=journal) as running:
            paused = await running.run(team_of.GOAL)
            assert paused.status == "paused"
            (pending,) = paused.pending_approvals
            await running.approve(pending.request_id, Approve())
            resumed = await running.resume(paused.run_id)
        records = [e.record for e in await journal.read(paused.run_id)]
    finally:
        await journal.close()
    assert resumed.status == "completed"
    said = [r.getMessage() for r in caplog.records if r.name == "regiment.run"]
    assert not [m for m in said if "in flight" in m], said
    for result in (paused, resumed):
        assert result.estimated_usage == Usage()
        assert result.usage_by_role["drafter"] == team_of.REFUSAL  # once: not asked again
        (failed,) = [s for s in result.steps if s.step_id == "s1"]
        assert (failed.status, failed.error_type) == ("failed", "regiment.errors.ModelRefused")
    assert paused.model_calls == 3 + team_of.REFUSAL_CALLS
    assert resumed.model_calls == paused.model_calls + 2
    started = {r.call_key for r in records if isinstance(r, ModelCallStarted)}
    finished = {r.call_key: r for r in records if isinstance(r, ModelCallFinished)}
    assert started <= finished.keys()
    refused = finished["step/1/s1/1"]
    assert refused.failed == {"error": "ModelRefused", "message": "refused"}
    assert (refused.response.usage, refused.calls) == (team_of.REFUSAL, team_of.REFUSAL_CALLS)
