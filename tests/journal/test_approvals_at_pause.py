"""A decision taken on a live run is in the journal when ``approve`` returns, even when
the run is pausing at that very moment: another team on the same journal sees it
before any resume, and a resume there applies it (the body runs once)."""

from __future__ import annotations

import pytest

from regiment.errors import ApprovalError
from regiment.hierarchy import ApprovalRequested, ApprovalResolved, RunCompleted
from regiment.journal import ApprovalDecided, open_journal
from regiment.tools import Approve, EditArguments
from tests.hierarchy.approval_team import Shop, plan_json, shop_team, step

pytestmark = pytest.mark.anyio

PLAN = plan_json(step("s1", "billing", "refund 88213 400"))


@pytest.fixture(params=("sqlite", "postgres"))
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


async def _decided_in(location: str, run_id: str) -> list[ApprovalDecided]:
    journal = await open_journal(location)
    try:
        records = [e.record for e in await journal.read(run_id)]
    finally:
        await journal.close()
    return [r for r in records if isinstance(r, ApprovalDecided)]


async def test_a_decision_as_the_run_pauses_is_journaled_before_approve_returns(
    location: str,
) -> None:
    shop = Shop()
    edit = EditArguments(arguments={"order_id": "88213", "amount": 100}, reason="cap")
    async with (
        shop_team(shop, PLAN).start(journal=location) as first,
        first.stream("refund") as events,
    ):
        async for event in events:
            if isinstance(event, ApprovalRequested):
                # The only step waits: the planner has just decided to pause, but the
                # run is still live in this process (its stream is open).
                request = event.request
                await first.approve(request.request_id, edit, by="ana")
                (decided,) = await _decided_in(location, request.run_id)
                assert (decided.approval_id, decided.decided_by) == (request.request_id, "ana")
                assert decided.decision == edit
                async with shop_team(Shop(), PLAN).start(journal=location) as other:
                    assert await other.pending_approvals(request.run_id) == ()
            last = event
    assert isinstance(last, RunCompleted)
    paused = last.result
    assert paused.status == "paused"
    assert shop.refunds == []

    async with shop_team(shop, PLAN).start(journal=location) as third:
        assert await third.pending_approvals(paused.run_id) == ()
        with pytest.raises(ApprovalError, match="already decided by ana"):
            await third.approve(request.request_id, Approve())
        result = await third.resume(paused.run_id)
    assert result.status == "completed"
    assert shop.refunds == [("88213", 100)]  # once, with the edited arguments
    assert len(await _decided_in(location, paused.run_id)) == 1  # not journaled twice


async def test_a_live_decision_is_journaled_once_and_the_run_goes_on(location: str) -> None:
    shop = Shop()
    plan = plan_json(step("s1", "billing", "refund 1 40"), step("s2", "slow", "slow"))
    async with (
        shop_team(shop, plan).start(journal=location) as running,
        running.stream("refund") as events,
    ):
        async for event in events:
            if isinstance(event, ApprovalRequested):
                await running.approve(event.request.request_id, Approve(), by="ana")
                assert len(await _decided_in(location, event.run_id)) == 1  # already there
            if isinstance(event, ApprovalResolved):
                shop.release.set()
            last = event
    assert isinstance(last, RunCompleted)
    assert last.result.status == "completed"
    assert shop.refunds == [("1", 40)]
    (decided,) = await _decided_in(location, last.result.run_id)  # the planner did not add one
    assert decided.decided_by == "ana"
