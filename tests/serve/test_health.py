"""``GET /health`` says whether the app takes runs: 200 ``ok`` while its team runs, 503
before its lifespan ran (a mount that forgot ``lifespan=``: a load balancer's check said
``ok`` while every ``POST /runs`` was a 503) and once the server has begun to stop (so a
load balancer drains it). Real uvicorn, the app mounted in a Starlette app of the user's."""

from __future__ import annotations

import httpx2 as httpx
import pytest
from starlette.applications import Starlette
from starlette.routing import Mount

from examples.service.serving import serving
from regiment.serve import create_app
from tests.hierarchy.approval_team import Shop, shop_team

pytestmark = pytest.mark.anyio


async def test_a_mount_without_the_lifespan_is_not_healthy() -> None:
    outer = Starlette(routes=[Mount("/agents", app=create_app(shop_team(Shop())))])
    async with serving(outer) as url, httpx.AsyncClient(base_url=f"{url}/agents") as c:
        health = await c.get("/health")
        posted = await c.post("/runs", json={"goal": "credit order 1"})
    assert posted.status_code == 503, posted.text
    assert health.status_code == 503, health.text
    assert health.json() == {"status": "not started", "detail": posted.json()["detail"]}
    assert "lifespan=app.router.lifespan_context" in health.json()["detail"]


async def test_health_is_ok_while_the_team_runs_and_503_once_it_stops() -> None:
    agents = create_app(shop_team(Shop()))
    outer = Starlette(
        routes=[Mount("/agents", app=agents)], lifespan=agents.router.lifespan_context
    )
    async with serving(outer) as url, httpx.AsyncClient(base_url=f"{url}/agents") as c:
        ok = await c.get("/health")
        assert (ok.status_code, ok.json()) == (200, {"status": "ok"})
        agents.state.regiment_stop_runs()  # (what a server calls as it begins to stop)
        stopping = await c.get("/health")
    assert stopping.status_code == 503, stopping.text
    assert stopping.json()["status"] == "stopping"
