"""``POST /runs/{id}/cancel`` of a paused run whose requests were all decided since (it
lists ``stalled``, waiting for ``POST /runs/{id}/resume``): it ends ``cancelled``. Before,
the service answered ``{"cancelling": false}`` and the run stayed resumable, though the
cancel and the approve had come together (real uvicorn + httpx, a real SQLite file)."""

from __future__ import annotations

from pathlib import Path

import httpx2 as httpx
import pytest

from examples.service.serving import serving
from regiment.serve import create_app
from tests.hierarchy.approval_team import Shop, plan_json, shop_team, step

pytestmark = pytest.mark.anyio

PLAN = plan_json(step("s1", "billing", "refund 2 500"))


async def test_a_decided_paused_run_is_cancelled_over_http(tmp_path: Path) -> None:
    shop = Shop()
    app = create_app(shop_team(shop, PLAN), journal=str(tmp_path / "runs.db"))
    async with serving(app) as url, httpx.AsyncClient(base_url=url) as c:
        paused = (await c.post("/runs?wait=true", json={"goal": "a refund"})).json()
        run_id = paused["run_id"]
        (request,) = (await c.get("/approvals")).json()["approvals"]
        decided = await c.post(f"/approvals/{request['request_id']}", json={"decision": "approve"})
        assert decided.status_code == 200, decided.text
        assert (await c.get(f"/runs/{run_id}")).json()["status"] == "stalled"
        cancel = await c.post(f"/runs/{run_id}/cancel")
        assert cancel.json() == {"run_id": run_id, "cancelling": True}
        view = (await c.get(f"/runs/{run_id}")).json()
        assert view["status"] == "cancelled", view
        resumed = await c.post(f"/runs/{run_id}/resume")
        assert resumed.status_code == 409, resumed.text
    assert shop.refunds == []
