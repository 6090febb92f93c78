"""``POST /runs/{id}/cancel`` of a run paused for an approval its nested team's run asked
for: the nested run ends ``cancelled`` with it. It was left unfinished: its journal listed
it ``stalled``, and ``GET /runs/{nested}`` said it waited to be resumed, though its top
run had ended and it could never be (real uvicorn + httpx, a real SQLite file and a real
PostgreSQL server; the views read again by a second app on the same journal)."""

from __future__ import annotations

import httpx2 as httpx
import pytest

from examples.service.serving import serving
from regiment.journal import nested_run_id, open_journal
from regiment.serve import create_app
from tests.hierarchy.approval_team import Shop, nested_team, plan_json, step

pytestmark = pytest.mark.anyio


async def test_cancelling_a_paused_run_ends_its_paused_nested_run_too(journal: str) -> None:
    shop = Shop()
    team = nested_team(shop, plan_json(step("d1", "desk", "ask the shop")))
    async with (
        serving(create_app(team, journal=journal)) as url,
        httpx.AsyncClient(base_url=url, timeout=60) as c,
    ):
        paused = (await c.post("/runs?wait=true", json={"goal": "go"})).json()
        top = paused["run_id"]
        nested = nested_run_id(top, 1, "d1")
        before = (await c.get(f"/runs/{nested}")).json()
        cancel = (await c.post(f"/runs/{top}/cancel")).json()
        view = (await c.get(f"/runs/{nested}")).json()
        approvals = (await c.get("/approvals")).json()["approvals"]
    async with (  # another process on the same journal reads the same
        serving(create_app(nested_team(Shop()), journal=journal)) as url,
        httpx.AsyncClient(base_url=url, timeout=60) as c,
    ):
        again = (await c.get(f"/runs/{nested}")).json()
        top_view = (await c.get(f"/runs/{top}")).json()
    reader = await open_journal(journal)
    try:
        listed = (await reader.get_run(nested)).status
    finally:
        await reader.close()
    assert paused["status"] == "paused", paused
    # Its top run's request pending, it lists as its journal does, `stalled`, and its answer
    # said "its approval requests have all been decided since: it waits to be resumed
    # (POST /runs/{nested}/resume...)", a resume that is refused.
    assert before["status"] == "stalled", before
    assert before["answer"] == (
        f"paused with run {top}, the run it serves (a nested team's run is not resumed "
        "alone): it goes on when that run's approval requests are decided and it is "
        f"resumed (POST /runs/{top}/resume)"
    )
    assert cancel == {"run_id": top, "cancelling": True}
    for shown in (view, again):
        assert shown["status"] == "cancelled", shown
        assert shown["answer"] is None, shown  # it said: waits to be resumed
        assert str(shown["error"]).startswith("RunCancelled: the run was cancelled while")
        assert str(shown["error"]).endswith("(with its top run)"), shown
    assert listed == "cancelled"  # as `regiment runs` and `regiment show` read it
    assert (top_view["status"], top_view["answer"]) == ("cancelled", None), top_view
    assert approvals == []
    assert shop.refunds == []
