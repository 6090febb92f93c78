"""A run paused for approvals can be cancelled (``RunningTeam.cancel_paused``): it ends
``cancelled``, journaled so (not resumable), its requests withdrawn: a later decision is
refused, saying the run was cancelled. Before, a paused run could not be cancelled at all:
it stayed paused, its requests pending, until someone decided and resumed it."""

from __future__ import annotations

from pathlib import Path

import pytest

from regiment.errors import AlreadyFinished, ApprovalError
from regiment.hierarchy import ApprovalRequested, RunFailed
from regiment.journal import open_journal
from regiment.tools import Approve

from .approval_team import Shop, plan_json, shop_team, step

pytestmark = pytest.mark.anyio


PLAN = plan_json(step("s1", "billing", "refund 1 40"), step("s2", "billing", "refund 2 50"))


@pytest.fixture(params=["sqlite", "postgres"])
def where(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return str(tmp_path / "runs.db")
    return str(request.getfixturevalue("postgres_url"))


async def test_a_paused_run_is_cancelled_and_its_requests_withdrawn(where: str) -> None:
    shop = Shop()
    async with shop_team(shop, PLAN).start(journal=where) as running:
        paused = await running.run("two refunds")
        assert paused.status == "paused"
        first, second = paused.pending_approvals
        ended = await running.cancel_paused(paused.run_id, reason="the customer called")
        assert isinstance(ended, RunFailed)
        assert ended.error_type == "RunCancelled"
        assert ended.message.endswith("waited for approval: the customer called")
        assert [p.version for p in ended.plans] == [1]  # what it got to by its pause
        assert await running.pending_approvals() == ()
        with pytest.raises(ApprovalError, match=r"has ended \(cancelled\)") as refused:
            await running.approve(first.request_id, Approve())
        assert refused.value.kind == "ended"
        with pytest.raises(AlreadyFinished):
            await running.resume(paused.run_id)
        assert await running.cancel_paused(paused.run_id) is None  # once
    assert shop.refunds == []
    journal = await open_journal(where)
    try:
        info = await journal.get_run(paused.run_id)
        assert info.status == "cancelled"
        assert await journal.pending_approvals() == ()
        found = await journal.approval(paused.run_id, second.request_id)
        assert found is not None
        assert found.decision is None  # withdrawn with its run, not decided
    finally:
        await journal.close()
    async with shop_team(Shop(), PLAN).start(journal=where) as again:  # another process
        with pytest.raises(ApprovalError, match=r"has ended \(cancelled\)"):
            await again.approve(second.request_id, Approve())


async def test_a_paused_run_without_a_journal_is_cancelled_on_the_desk() -> None:
    shop = Shop()
    async with shop_team(shop, PLAN).start() as running:
        paused = await running.run("two refunds")
        (first, _) = paused.pending_approvals
        ended = await running.cancel_paused(paused.run_id)
        assert ended is not None
        assert ended.error_type == "RunCancelled"
        assert await running.pending_approvals() == ()
        with pytest.raises(ApprovalError, match="withdrawn: the run was cancelled"):
            await running.approve(first.request_id, Approve())
        assert await running.cancel_paused(paused.run_id) is None


async def test_a_live_run_is_not_cancelled_as_a_paused_one(tmp_path: Path) -> None:
    shop = Shop()
    plan = plan_json(step("s1", "billing", "refund 1 40"), step("s2", "slow", "slow"))
    async with shop_team(shop, plan).start(journal=str(tmp_path / "runs.db")) as running:
        async with running.stream("a refund") as stream:
            async for event in stream:
                if isinstance(event, ApprovalRequested):
                    assert await running.cancel_paused(event.run_id) is None
                    await running.approve(event.request.request_id, Approve())
                    shop.release.set()
        assert stream.ending is not None
    assert shop.refunds == [("1", 40)]
