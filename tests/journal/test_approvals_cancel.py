"""A decision that comes as its run ends without it (cancelled): refused, saying the run
has ended, and the run's end stays as it was (it does not turn ``failed``)."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import ClassVar

import anyio
import pytest

from regiment.errors import ApprovalError
from regiment.hierarchy import ApprovalRequested
from regiment.journal import Lease, Record, RunFinished, SqliteJournal
from regiment.tools import ApprovalRequest, Approve
from tests.hierarchy.approval_team import Shop, plan_json, shop_team, step

pytestmark = pytest.mark.anyio


class _HeldFinish(SqliteJournal):  # type: ignore[misc]  # (final: a test-only double)
    """A real SQLite journal that, once a run's end is appended, holds the run (before it
    closes) until ``go``."""

    holding: ClassVar[anyio.Event]
    go: ClassVar[anyio.Event]

    async def append_all(
        self, lease: Lease, records: Iterable[Record], *, durable: bool = False
    ) -> tuple[int, ...]:
        records = tuple(records)
        seqs: tuple[int, ...] = await super().append_all(lease, records, durable=durable)
        if any(isinstance(r, RunFinished) for r in records):
            _HeldFinish.holding.set()
            await _HeldFinish.go.wait()
        return seqs


async def test_a_decision_as_the_run_ends_cancelled_is_refused_and_the_run_stays_cancelled(
    tmp_path: Path,
) -> None:
    # The decision was appended after the run's end, under the run's own lease: the
    # journal refused it ("has finished; nothing may follow its result"), approve said
    # so as a journal failure ("try again"), and the refusal failed the run's own close:
    # a cancelled run ended failed (a decision racing POST /runs/{id}/cancel).
    _HeldFinish.holding, _HeldFinish.go = anyio.Event(), anyio.Event()
    journal = await _HeldFinish.open(tmp_path / "runs.db")
    shop = Shop()
    plan = plan_json(step("s1", "billing", "refund 88213 400"), step("s2", "slow", "slow work"))
    asked: list[ApprovalRequest] = []
    try:
        async with shop_team(shop, plan).start(journal=journal) as running:
            async with anyio.create_task_group() as tg:

                async def leave_at_the_request() -> None:
                    async with running.stream("refund") as events:
                        async for event in events:
                            if isinstance(event, ApprovalRequested):
                                asked.append(event.request)
                                break  # the caller leaves: the run is cancelled

                tg.start_soon(leave_at_the_request)
                with anyio.fail_after(10):
                    await _HeldFinish.holding.wait()
                (request,) = asked
                try:
                    with (
                        pytest.raises(ApprovalError, match=r"has ended \(cancelled\)") as refused,
                        anyio.fail_after(10),  # (it waited on the journal, which the run holds)
                    ):
                        await running.approve(request.request_id, Approve(), by="ana")
                finally:
                    _HeldFinish.go.set()
                assert refused.value.kind == "ended"
            assert await running.pending_approvals() == ()
        assert (await journal.get_run(request.run_id)).status == "cancelled"
        assert shop.refunds == []
    finally:
        await journal.close()
