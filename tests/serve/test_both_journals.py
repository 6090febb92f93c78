"""Approve, resume and cancel over HTTP on both journal kinds (a real SQLite file and a
real PostgreSQL server), across a restart of the service, under real uvicorn."""

from __future__ import annotations

from pathlib import Path

import httpx2 as httpx
import pytest

from examples.service.serving import serving
from regiment.serve import create_app
from tests.hierarchy.approval_team import Shop, plan_json, shop_team, step
from tests.journal.test_postgres_down import server

from .sse import run_events

pytestmark = pytest.mark.anyio

__all__ = ("server",)  # the fixture, shared


@pytest.fixture(params=["sqlite", "postgres"])
def journal(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return str(tmp_path / "runs.db")
    return str(request.getfixturevalue("server").url)


async def test_a_paused_run_is_decided_and_resumed_after_a_restart(journal: str) -> None:
    shop = Shop()
    plan = plan_json(step("s1", "billing", "refund 2 500"))
    async with (
        serving(create_app(shop_team(shop, plan), journal=journal)) as url,
        httpx.AsyncClient(base_url=url) as c,
    ):
        done = (await c.post("/runs?wait=true", json={"goal": "a refund"})).json()
        run_id = done["run_id"]
        assert done["status"] == "paused"
        before = await run_events(c, run_id)
    # the service restarts: the run is the journal's
    async with (
        serving(create_app(shop_team(shop, plan), journal=journal)) as url,
        httpx.AsyncClient(base_url=url) as c,
    ):
        view = (await c.get(f"/runs/{run_id}")).json()
        assert view["status"] == "paused"
        (asked,) = view["pending_approvals"]
        assert await run_events(c, run_id) == before  # the same events, the same numbers
        (listed,) = (await c.get("/approvals", params={"run_id": run_id})).json()["approvals"]
        assert listed["request_id"] == asked["request_id"]
        decided = await c.post(f"/approvals/{asked['request_id']}", json={"decision": "approve"})
        assert decided.status_code == 200, decided.text
        assert (await c.get(f"/runs/{run_id}")).json()["status"] == "stalled"
        resumed = await c.post(f"/runs/{run_id}/resume?wait=true")
        assert resumed.status_code == 200, resumed.text
        assert resumed.json()["status"] == "completed"
        after = await run_events(c, run_id, last=before[-1].id)
        assert after
        assert [f.id for f in after] == list(range(len(before) + 1, len(before) + len(after) + 1))
        assert after[-1].event == "RunCompleted"
        again = await c.post(f"/approvals/{asked['request_id']}", json={"decision": "approve"})
        assert again.status_code == 409
    assert shop.refunds == [("2", 500)]  # once


async def test_a_run_cancelled_over_http_stays_cancelled_after_a_restart(journal: str) -> None:
    shop = Shop()
    plan = plan_json(step("s1", "slow", "slow work"))
    async with (
        serving(create_app(shop_team(shop, plan), journal=journal)) as url,
        httpx.AsyncClient(base_url=url) as c,
    ):
        run_id = (await c.post("/runs", json={"goal": "slow work"})).json()["run_id"]
        async with c.stream("GET", f"/runs/{run_id}/events") as events:
            async for line in events.aiter_lines():
                if line == "event: StepDispatched":
                    break
        cancelled = await c.post(f"/runs/{run_id}/cancel")
        assert (cancelled.status_code, cancelled.json()["cancelling"]) == (202, True)
        last = (await run_events(c, run_id))[-1]
        assert last.data is not None
        assert last.data["error_type"] == "RunCancelled"
    async with (
        serving(create_app(shop_team(shop, plan), journal=journal)) as url,
        httpx.AsyncClient(base_url=url) as c,
    ):
        view = (await c.get(f"/runs/{run_id}")).json()
        assert view["status"] == "cancelled"
        assert (await run_events(c, run_id))[-1] == last
        listed = (await c.get("/runs", params={"status": "cancelled"})).json()["runs"]
        assert [r["run_id"] for r in listed] == [run_id]
        late = await c.post(f"/runs/{run_id}/cancel")
        assert (late.status_code, late.json()["cancelling"]) == (202, False)
        refused = await c.post(f"/runs/{run_id}/resume")
        assert refused.status_code == 409
    assert shop.slow_done == []
