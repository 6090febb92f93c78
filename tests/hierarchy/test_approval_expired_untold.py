"""A request that expires before its run is told of it (a timeout shorter than the
journal's look-up of the request, or a loaded machine) still has its
``ApprovalRequested`` before its ``ApprovalResolved``, in the events and in the journal.
Before, the desk told the run only the expiry: the stream had a resolution of a request
it never saw, and a reader that pairs them (this suite's own approval tests, a UI
listing pending requests) waited for good."""

from __future__ import annotations

from pathlib import Path

import pytest

from regiment.hierarchy import ApprovalRequested, ApprovalResolved, Event, RunCompleted
from regiment.journal import open_journal, read_run
from regiment.journal._records import ApprovalDecided
from regiment.journal._records import ApprovalRequested as Asked

from .approval_team import Shop, plan_json, shop_team, step

pytestmark = pytest.mark.anyio


async def test_a_request_that_expires_untold_is_still_requested_first(tmp_path: Path) -> None:
    shop = Shop()
    plan = plan_json(step("s1", "billing", "refund 9 40"))
    # 1 µs: gone before the desk's journal look-up (a thread's round trip) returns.
    team = shop_team(shop, plan, approval_timeout=1e-6)
    where = str(tmp_path / "runs.db")
    seen: list[Event] = []
    async with team.start(journal=where) as running, running.stream("refund") as events:
        async for event in events:
            seen.append(event)
    kinds = [type(e) for e in seen if isinstance(e, ApprovalRequested | ApprovalResolved)]
    assert kinds == [ApprovalRequested, ApprovalResolved]
    (asked,) = [e for e in seen if isinstance(e, ApprovalRequested)]
    (resolved,) = [e for e in seen if isinstance(e, ApprovalResolved)]
    assert asked.request.request_id == resolved.request_id
    assert (resolved.decision, resolved.decided_by) == ("deny", "timeout")
    assert shop.refunds == []
    assert shop.seen == ["denied: no decision before the request expired"]
    done = seen[-1]
    assert isinstance(done, RunCompleted)
    assert done.result.status == "completed"
    journal = await open_journal(where)
    try:
        _, entries = await read_run(journal, done.result.run_id)
    finally:
        await journal.close()
    records = [e.record for e in entries if isinstance(e.record, Asked | ApprovalDecided)]
    assert [type(r) for r in records] == [Asked, ApprovalDecided]
    assert {r.approval_id for r in records} == {resolved.request_id}
