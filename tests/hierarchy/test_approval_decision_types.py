"""A decision that is not one, or holds other types than it declares, is refused before
anything is recorded, and the request stays pending.

``running.approve(rid, "approve")`` (a string from a form, say) was taken: journaled as it
was, it left the run's journal unreadable (``JournalError: ... holds a record that cannot
be read: Expected `object`, got `str` - at `$.decision```), so every later decision and
every resume of the run failed, for good. So did ``Deny(reason=None)``,
``EditArguments(arguments="...")`` and ``by=5``. Without a journal a live run's waiting
call got the string.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from regiment.errors import ApprovalError, StepFailed
from regiment.hierarchy import ApprovalRequested, ApprovalResolved, RunningTeam, Worker
from regiment.journal import open_journal
from regiment.tools import Approve, Deny, EditArguments, Toolset

from .approval_team import Shop, plan_json, shop_team, step

pytestmark = pytest.mark.anyio

_NOT_DECISIONS: list[tuple[object, dict[str, object], str]] = [
    ("approve", {}, "the decision is the str 'approve', not a decision: pass Approve()"),
    (None, {}, "the decision is the NoneType None, not a decision"),
    (Deny(reason=None), {}, "Deny does not hold what it declares (Expected `str`, got `null`"),  # type: ignore[arg-type]
    (EditArguments(arguments="x"), {}, "EditArguments does not hold what it declares"),  # type: ignore[arg-type]
    (EditArguments(arguments={"order_id": object()}), {}, "Encoding objects of type object"),  # type: ignore[dict-item]
    (Approve(), {"by": 5}, "by= is the int 5, not text"),
]


async def _refused_each(running: RunningTeam, request_id: str) -> None:
    for decision, extra, said in _NOT_DECISIONS:
        with pytest.raises(ApprovalError) as refused:
            await running.approve(request_id, decision, **extra)  # type: ignore[arg-type]
        assert refused.value.kind == "invalid"
        assert said in str(refused.value)
        assert f"request {request_id} stays pending, decide again" in str(refused.value)
        pending = await running.pending_approvals()
        assert [r.request_id for r in pending] == [request_id]


async def test_a_paused_runs_request_refuses_them_and_the_run_still_resumes(
    tmp_path: Path,
) -> None:
    shop = Shop()
    team = shop_team(shop, plan_json(step("s1", "billing", "refund 1 40")))
    async with team.start(journal=str(tmp_path / "runs.db")) as running:
        paused = await running.run("refund")
        assert paused.status == "paused"
        (request,) = paused.pending_approvals
        await _refused_each(running, request.request_id)
        await running.approve(request.request_id, Approve(), by="ana")
        resumed = await running.resume(paused.run_id)
    assert resumed.status == "completed"
    assert shop.refunds == [("1", 40)]


async def test_a_live_runs_waiting_call_gets_only_a_decision() -> None:
    shop = Shop()
    plan = plan_json(step("s1", "billing", "refund 2 30"), step("s2", "slow", "slow"))
    team = shop_team(shop, plan)
    async with team.start() as running, running.stream("refund") as events:
        async for event in events:
            if isinstance(event, ApprovalRequested):
                await _refused_each(running, event.request.request_id)
                await running.approve(event.request.request_id, Approve())
            elif isinstance(event, ApprovalResolved):
                shop.release.set()
    assert shop.refunds == [("2", 30)]
    assert shop.seen == ["refunded 30 on 2"]


async def test_an_approvers_malformed_decision_on_a_resume_leaves_the_journal_readable(
    tmp_path: Path,
) -> None:
    """A resumed run journals its in-process approver's answer: ``Deny(reason=None)``
    was journaled as it was, and the run's journal could no longer be read."""
    shop, path = Shop(), str(tmp_path / "runs.db")
    team = shop_team(shop, plan_json(step("s1", "billing", "refund 1 40")))
    async with team.start(journal=path) as running:
        paused = await running.run("refund")
    billing = team.workers[0]
    assert isinstance(billing, Worker)
    policy = Toolset("billing", shop.tools(), approver=lambda r: Deny(reason=None))  # type: ignore[arg-type]
    asking = dataclasses.replace(
        team, workers=[dataclasses.replace(billing, tools=policy), *team.workers[1:]]
    )
    async with asking.start(journal=path) as running:
        with pytest.raises(StepFailed, match=r"returned Deny\(reason=None\), which does not hold"):
            await running.resume(paused.run_id, force=True)
    journal = await open_journal(path)
    try:
        entries = await journal.read(paused.run_id)  # it raised JournalError
    finally:
        await journal.close()
    assert entries
    assert shop.refunds == []
