"""A resume racing a paused run's cancel in the same process (``RunningTeam.resume`` and
``cancel_paused`` at once, as two requests to one service do): one of them wins, and the
other is told what became of the run. Before, a resume that met the lease the cancel held
for its two writes raised ``LeaseHeld`` saying the run was "running in this process
already", which it was not: it was being cancelled. A resume now waits such a brief hold
out and is told the run already finished (cancelled)."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from regiment.errors import AlreadyFinished
from regiment.hierarchy import RunFailed
from regiment.journal import open_journal
from regiment.tools import Approve

from .approval_team import Shop, plan_json, shop_team, step

pytestmark = pytest.mark.anyio

PLAN = plan_json(step("s1", "billing", "refund 1 40"), step("s2", "billing", "refund 2 50"))


async def _race(where: str, delay: float) -> tuple[object, object]:
    """A paused run, then its cancel and (``delay`` s later) its resume at once."""
    outcome: dict[str, object] = {}
    async with shop_team(Shop(), PLAN).start(journal=where) as running:
        paused = await running.run("two refunds")
        assert paused.status == "paused"

        async def cancel() -> None:
            outcome["cancel"] = await running.cancel_paused(paused.run_id, reason="called")

        async def resume() -> None:
            await anyio.sleep(delay)
            try:
                outcome["resume"] = await running.resume(paused.run_id)
            except Exception as exc:  # what the resume was told: checked below
                outcome["resume"] = exc

        async with anyio.create_task_group() as group:
            group.start_soon(cancel)
            group.start_soon(resume)
    return outcome["cancel"], outcome["resume"]


async def test_a_resume_racing_a_cancel_is_told_what_became_of_the_run(tmp_path: Path) -> None:
    for attempt in range(8):  # the resume meets the cancel's lease in some of them
        cancelled, resumed = await _race(str(tmp_path / f"runs{attempt}.db"), attempt * 0.002)
        if isinstance(cancelled, RunFailed):  # the cancel won: the resume is refused so
            assert isinstance(resumed, AlreadyFinished), resumed
            assert "already finished (cancelled)" in str(resumed)
        else:  # the resume won: the cancel changed nothing, and the run paused again
            assert cancelled is None
            assert getattr(resumed, "status", None) == "paused", resumed


async def test_a_paused_run_whose_requests_were_decided_is_still_cancelled(
    tmp_path: Path,
) -> None:
    """Approved, then thought better of before its resume (or a cancel that came just
    after an approve): the run lists ``stalled``, waiting to be resumed. Before, its cancel
    returned ``None`` (the service's ``{"cancelling": false}``) and changed nothing."""
    where = str(tmp_path / "runs.db")
    shop = Shop()
    async with shop_team(shop, PLAN).start(journal=where) as running:
        paused = await running.run("two refunds")
        for request in paused.pending_approvals:
            await running.approve(request.request_id, Approve())
        ended = await running.cancel_paused(paused.run_id, reason="approved by mistake")
        assert isinstance(ended, RunFailed), ended
        assert ended.message.endswith("approved by mistake")
        assert [p.version for p in ended.plans] == [1]
        with pytest.raises(AlreadyFinished, match=r"already finished \(cancelled\)"):
            await running.resume(paused.run_id)
    assert shop.refunds == []
    journal = await open_journal(where)
    try:
        assert (await journal.get_run(paused.run_id)).status == "cancelled"
    finally:
        await journal.close()
