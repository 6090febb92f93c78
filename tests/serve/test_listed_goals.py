"""``GET /runs`` cuts a long goal to 200 characters and a ``…``; ``GET
/runs/{id}`` has it whole. (Every listing carried every run's whole goal: one run with
a 1 MiB goal made each ``GET /runs`` 1 MiB larger.)"""

from __future__ import annotations

from pathlib import Path

import httpx2 as httpx
import pytest

from examples.service.serving import serving
from regiment.serve import create_app

from .teams import support_team

pytestmark = pytest.mark.anyio

LONG = "What is the status of order 88213? " + "Mind the details. " * 5000  # 90 KB


async def test_a_listing_cuts_long_goals_and_a_runs_view_has_it_whole(tmp_path: Path) -> None:
    journal = str(tmp_path / "runs.db")
    async with support_team().start(journal=journal) as running:  # a run of an earlier process
        earlier = (await running.run(LONG)).run_id
    async with (
        serving(create_app(support_team(), journal=journal)) as url,
        httpx.AsyncClient(base_url=url) as c,
    ):
        own = (await c.post("/runs?wait=true", json={"goal": LONG})).json()["run_id"]
        short = (await c.post("/runs?wait=true", json={"goal": "a short one"})).json()["run_id"]
        listing = await c.get("/runs")
        views = [(await c.get(f"/runs/{run_id}")).json() for run_id in (own, earlier)]
    goals = {r["run_id"]: r["goal"] for r in listing.json()["runs"]}
    cut = LONG[:200] + "…"  # as the README says
    assert goals == {own: cut, earlier: cut, short: "a short one"}
    assert len(listing.content) < 2000  # not the goals' 180 KB
    assert [view["goal"] for view in views] == [LONG, LONG]
