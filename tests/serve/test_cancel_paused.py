"""``POST /runs/{id}/cancel`` of a run paused for approvals (real uvicorn + httpx, on a
real SQLite file and a real PostgreSQL server): it ends ``cancelled``, its requests are
withdrawn, a later decision is 409 saying the run was cancelled, and a restarted service
sees it so. Before, the cancel answered ``{"cancelling": false}`` and changed nothing."""

from __future__ import annotations

import httpx2 as httpx
import pytest

from examples.service.serving import serving
from regiment.serve import create_app
from tests.hierarchy.approval_team import Shop, shop_team
from tests.serve.journals import PLAN

from .sse import run_events

pytestmark = pytest.mark.anyio


async def test_a_paused_run_is_cancelled_over_http(journal: str) -> None:
    shop = Shop()
    async with (
        serving(create_app(shop_team(shop, PLAN), journal=journal)) as url,
        httpx.AsyncClient(base_url=url) as c,
    ):
        paused = (await c.post("/runs?wait=true", json={"goal": "a refund"})).json()
        run_id = paused["run_id"]
        assert paused["status"] == "paused"
        (request,) = (await c.get("/approvals")).json()["approvals"]
        cancel = await c.post(f"/runs/{run_id}/cancel")
        assert (cancel.status_code, cancel.json()) == (
            202,
            {"run_id": run_id, "cancelling": True},
        )
        view = (await c.get(f"/runs/{run_id}")).json()
        assert view["status"] == "cancelled", view
        assert (await c.get("/approvals")).json() == {"approvals": []}
        late = await c.post(f"/approvals/{request['request_id']}", json={"decision": "approve"})
        assert late.status_code == 409, late.text
        assert "has ended (cancelled)" in late.json()["detail"]
        again = await c.post(f"/runs/{run_id}/cancel")
        assert again.json()["cancelling"] is False  # once
        frames = await run_events(c, run_id)
    assert frames[-1].event == "RunFailed"
    assert frames[-1].data is not None
    assert frames[-1].data["error_type"] == "RunCancelled"
    assert shop.refunds == []
    async with (  # the service restarts: the journal has the run cancelled
        serving(create_app(shop_team(shop, PLAN), journal=journal)) as url,
        httpx.AsyncClient(base_url=url) as c,
    ):
        assert (await c.get(f"/runs/{run_id}")).json()["status"] == "cancelled"
        resumed = await c.post(f"/runs/{run_id}/resume")
        assert resumed.status_code == 409, resumed.text
        replayed = await run_events(c, run_id)
    assert [f.event for f in replayed] == [f.event for f in frames]
    assert shop.refunds == []


async def test_a_paused_run_of_a_service_without_a_journal_is_cancelled() -> None:
    shop = Shop()
    async with (
        serving(create_app(shop_team(shop, PLAN))) as url,
        httpx.AsyncClient(base_url=url) as c,
    ):
        paused = (await c.post("/runs?wait=true", json={"goal": "a refund"})).json()
        run_id = paused["run_id"]
        assert paused["status"] == "paused"
        (request,) = (await c.get("/approvals")).json()["approvals"]
        cancel = await c.post(f"/runs/{run_id}/cancel")
        assert cancel.json()["cancelling"] is True
        assert (await c.get(f"/runs/{run_id}")).json()["status"] == "cancelled"
        assert (await c.get("/approvals")).json() == {"approvals": []}
        late = await c.post(f"/approvals/{request['request_id']}", json={"decision": "approve"})
        assert late.status_code == 409, late.text
        assert "withdrawn: the run was cancelled" in late.json()["detail"]


async def test_without_a_journal_a_paused_run_stays_undecided_and_is_cancelled() -> None:
    # Without a journal a paused run cannot be resumed, so a decision on its requests is
    # refused (409) and they stay pending: a paused run whose requests were all decided
    # cannot arise here, and its cancel still finds what to withdraw.
    shop = Shop()
    async with (
        serving(create_app(shop_team(shop, PLAN))) as url,
        httpx.AsyncClient(base_url=url) as c,
    ):
        run_id = (await c.post("/runs?wait=true", json={"goal": "a refund"})).json()["run_id"]
        (request,) = (await c.get("/approvals")).json()["approvals"]
        path = f"/approvals/{request['request_id']}"
        refused = await c.post(path, json={"decision": "approve"})
        still = (await c.get("/approvals")).json()["approvals"]
        listed = (await c.get(f"/runs/{run_id}")).json()["status"]
        cancel = await c.post(f"/runs/{run_id}/cancel")
        view = (await c.get(f"/runs/{run_id}")).json()
    assert refused.status_code == 409, refused.text
    assert [r["request_id"] for r in still] == [request["request_id"]]
    assert listed == "paused"
    assert cancel.json() == {"run_id": run_id, "cancelling": True}
    assert view["status"] == "cancelled", view
    assert shop.refunds == []
