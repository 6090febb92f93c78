"""The app mounted under a prefix in a user's Starlette app, under a real uvicorn: what
it answers names its routes as a client reaches them, prefix and all."""

from __future__ import annotations

from pathlib import Path

import httpx2 as httpx
import pytest
from starlette.applications import Starlette
from starlette.routing import Mount

from examples.service.serving import serving
from regiment.serve import create_app

from .teams import Stuck, stuck_team, support_team

pytestmark = pytest.mark.anyio

GOAL = "What is the status of order 77120?"
SCAN = "Please scan the warehouse for order 55001."


def mounted(agents: Starlette) -> Starlette:
    """The one line a user writes: the app under ``/agents``, its lifespan run by theirs."""
    return Starlette(routes=[Mount("/agents", app=agents)], lifespan=agents.router.lifespan_context)


async def test_a_started_run_is_located_under_the_prefix() -> None:
    # The 202 had no Location: a client had to know where the app is mounted.
    async with (
        serving(mounted(create_app(support_team()))) as url,
        httpx.AsyncClient(base_url=url) as c,
    ):
        accepted = await c.post("/agents/runs", json={"goal": GOAL})
        assert accepted.status_code == 202
        run_id = accepted.json()["run_id"]
        assert accepted.headers["location"] == f"/agents/runs/{run_id}"
        async with c.stream("GET", f"{accepted.headers['location']}/events") as events:
            async for _ in events.aiter_lines():  # to the run's end
                pass
        run = await c.get(accepted.headers["location"])
        assert run.json()["status"] == "completed"


async def test_what_it_answers_names_the_routes_under_the_prefix(tmp_path: Path) -> None:
    # Each said "GET /runs lists them", "GET /approvals ...", "POST /runs takes ...":
    # routes a client of the mounted app does not reach.
    stuck = Stuck()
    agents = create_app(stuck_team(stuck), journal=str(tmp_path / "runs.db"))
    async with serving(mounted(agents)) as url, httpx.AsyncClient(base_url=url) as c:
        unknown = await c.get("/agents/runs/run-404")
        assert unknown.json()["detail"] == "no run 'run-404'; GET /agents/runs lists them"
        undecided = await c.post("/agents/approvals/apr-1", json={"decision": "approve"})
        assert undecided.json()["detail"].endswith("; GET /agents/approvals lists the pending ones")
        nowhere = await c.get("/agents/run")
        assert nowhere.status_code == 404
        assert nowhere.json()["detail"].startswith(
            "no route /agents/run; this app serves /agents/health, /agents/runs, "
        )
        typo = await c.post("/agents/runs?wiat=true", json={"goal": SCAN})
        assert typo.json()["detail"] == (
            "POST /agents/runs takes no query parameter 'wiat'; it takes ?wait"
        )
        run_id = (await c.post("/agents/runs", json={"goal": SCAN})).json()["run_id"]
        await stuck.started.wait()
        again = await c.post(f"/agents/runs/{run_id}/resume")
        assert again.status_code == 409
        assert again.json()["detail"] == (
            f"run {run_id!r} is running in this service already: follow it with "
            f"GET /agents/runs/{run_id}/events"
        )
        assert (await c.post(f"/agents/runs/{run_id}/cancel")).status_code == 202
