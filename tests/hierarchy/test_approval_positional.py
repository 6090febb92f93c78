"""Issue #17 writes the decisions as ``Deny(reason)`` and ``EditArguments(arguments)``:
they take their field by position as well as by keyword. ``Deny("over the limit")``
raised ``TypeError: Extra positional arguments provided``."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest

from regiment import Deny, EditArguments

from .approval_team import Shop, plan_json, shop_team, step

pytestmark = pytest.mark.anyio


def test_the_decisions_take_their_field_by_position() -> None:
    assert Deny("over the limit") == Deny(reason="over the limit")
    assert EditArguments({"amount": 1}) == EditArguments(arguments={"amount": 1})
    assert EditArguments({"amount": 1}, "capped") == EditArguments(
        arguments={"amount": 1}, reason="capped"
    )
    # what the journal and the service write of them is unchanged
    assert msgspec.json.encode(Deny("no")) == b'{"type":"deny","reason":"no"}'


async def test_a_positional_deny_and_edit_decide_a_paused_run(tmp_path: Path) -> None:
    shop = Shop()
    plan = plan_json(step("s1", "billing", "refund 1 400"), step("s2", "billing", "refund 2 50"))
    team = shop_team(shop, plan)
    async with team.start(journal=str(tmp_path / "runs.db")) as running:
        paused = await running.run("refund both")
        assert paused.status == "paused"
        by_order = {r.arguments["order_id"]: r.request_id for r in paused.pending_approvals}
        await running.approve(by_order["1"], Deny("over the limit"))
        await running.approve(by_order["2"], EditArguments({"order_id": "2", "amount": 40}))
        resumed = await running.resume(paused.run_id)
    assert resumed.status == "completed"
    assert shop.refunds == [("2", 40)]
    assert "denied: over the limit" in shop.seen
