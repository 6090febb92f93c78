"""A paused run's approvals live in the journal: another process (here: another
started team on the same file or database) lists them and decides them."""

from __future__ import annotations

from collections.abc import Iterable

import anyio
import pytest

from regiment import RunningTeam
from regiment.errors import ApprovalError
from regiment.journal import ApprovalDecided, ApprovalRequested, open_journal
from regiment.tools import ApprovalRequest, Approve, Deny, EditArguments
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
        assert (await journal.get_run(run_id)).status == "paused"
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


async def test_two_teams_deciding_one_request_at_once_record_one_decision(location: str) -> None:
    # Both found the request pending before either held the run's lease: both decisions
    # were appended (the run's pending count went one too low, so with its other request
    # still waiting it listed as stalled), or the second was told the lease "is alive for
    # another 30 s" though its holder let go a moment later.
    plan = plan_json(step("s1", "billing", "refund 88213 400"), step("s2", "billing", "refund 7 5"))
    async with shop_team(Shop(), plan).start(journal=location) as first:
        result = await first.run("two refunds")
    big = next(r for r in result.pending_approvals if r.arguments["order_id"] == "88213")
    async with (
        shop_team(Shop(), plan).start(journal=location) as ana,
        shop_team(Shop(), plan).start(journal=location) as bo,
        anyio.create_task_group() as tg,
    ):
        outcomes: list[str] = []

        async def decide(team: RunningTeam, by: str) -> None:
            try:
                await team.approve(big.request_id, Approve(), by=by)
            except ApprovalError as exc:
                outcomes.append(f"refused: {exc.kind}")
            else:
                outcomes.append(f"decided by {by}")

        tg.start_soon(decide, ana, "ana")
        tg.start_soon(decide, bo, "bo")
    assert sorted(outcomes)[1] == "refused: decided"
    assert sorted(outcomes)[0] in ("decided by ana", "decided by bo")
    journal = await open_journal(location)
    try:
        records = [e.record for e in await journal.read(result.run_id)]
        assert (await journal.get_run(result.run_id)).status == "paused"  # s2's
    finally:
        await journal.close()
    assert len([r for r in records if isinstance(r, ApprovalDecided)]) == 1


async def test_a_decision_recorded_after_another_is_refused_under_the_runs_lease(
    location: str,
) -> None:
    # What the race above comes down to, in order: the second decider found the request
    # pending, and records its decision only once the first has recorded one.
    from regiment.hierarchy._approving import record_decision

    plan = plan_json(step("s1", "billing", "refund 88213 400"), step("s2", "billing", "refund 7 5"))
    async with shop_team(Shop(), plan).start(journal=location) as first:
        result = await first.run("two refunds")
    big = next(r for r in result.pending_approvals if r.arguments["order_id"] == "88213")
    journal = await open_journal(location)
    try:
        await record_decision(journal, big, Approve(), "ana")
        with pytest.raises(ApprovalError, match="already decided by ana") as refused:
            await record_decision(journal, big, Deny(reason="no"), "bo")
        records = [e.record for e in await journal.read(result.run_id)]
        assert (await journal.get_run(result.run_id)).status == "paused"  # s2's
    finally:
        await journal.close()
    assert refused.value.kind == "decided"
    decided = [r for r in records if isinstance(r, ApprovalDecided)]
    assert [(r.decided_by, r.decision) for r in decided] == [("ana", Approve())]
