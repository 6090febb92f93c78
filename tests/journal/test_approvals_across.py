"""A paused run's approvals live in the journal: another process (here: another
started team on the same file or database) lists them and decides them."""

from __future__ import annotations

from collections.abc import Iterable

import pytest

from regiment.errors import ApprovalError
from regiment.journal import ApprovalDecided, ApprovalRequested, open_journal
from regiment.tools import ApprovalRequest, Approve, EditArguments
from tests.hierarchy.approval_team import Shop, plan_json, shop_team, step

pytestmark = pytest.mark.anyio


def _by_id(requests: Iterable[ApprovalRequest]) -> dict[str, ApprovalRequest]:
    return {r.request_id: r for r in requests}


@pytest.fixture(params=("sqlite", "postgres"))
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


async def test_a_paused_run_is_decided_from_another_team_on_the_same_journal(
    location: str,
) -> None:
    shop = Shop()
    plan = plan_json(step("s1", "billing", "refund 88213 400"), step("s2", "billing", "refund 7 5"))
    async with shop_team(shop, plan).start(journal=location) as first:
        result = await first.run("two refunds")
    assert result.status == "paused"
    assert len(result.pending_approvals) == 2  # two parallel steps, both waiting
    run_id = result.run_id

    journal = await open_journal(location)
    try:
        assert (await journal.get_run(run_id)).status == "awaiting_approval"
        journaled = await journal.pending_approvals(run_id)
        assert _by_id(r.request for r in journaled) == _by_id(result.pending_approvals)
        big = next(r for r in result.pending_approvals if r.arguments["order_id"] == "88213")
        small = next(r for r in result.pending_approvals if r.arguments["order_id"] == "7")

        async with shop_team(Shop(), plan).start(journal=location) as second:
            listed = await second.pending_approvals(run_id)
            assert _by_id(listed) == _by_id(result.pending_approvals)
            bad = EditArguments(arguments={"order_id": "88213", "amount": "four hundred"})
            with pytest.raises(ApprovalError, match=r"do not validate.*stays pending"):
                await second.approve(big.request_id, bad)
            assert len(await journal.pending_approvals(run_id)) == 2
            edit = EditArguments(arguments={"order_id": "88213", "amount": 100}, reason="cap")
            decided = await second.approve(big.request_id, edit, by="ana")
            assert decided == big
            await second.approve(small.request_id, Approve(), by="bo", run_id=run_id)
            with pytest.raises(ApprovalError, match="already decided by ana"):
                await second.approve(big.request_id, Approve())
            with pytest.raises(ApprovalError, match="no approval request 'apr-unknown'"):
                await second.approve("apr-unknown", Approve())

        assert await journal.pending_approvals(run_id) == ()
        assert (await journal.get_run(run_id)).status == "stalled"  # ready to resume
        records = [e.record for e in await journal.read(run_id)]
        asked = [r for r in records if isinstance(r, ApprovalRequested)]
        assert {r.approval_id for r in asked} == {big.request_id, small.request_id}
        answers = {r.approval_id: r for r in records if isinstance(r, ApprovalDecided)}
        assert answers[big.request_id].decision == edit
        assert answers[big.request_id].decided_by == "ana"
        assert answers[small.request_id].decision == Approve()
    finally:
        await journal.close()
    assert shop.refunds == []  # nothing ran: the run is paused until resumed
