"""A nested team's run, asked about by its own id, under a real uvicorn and a real SQLite
journal: the service's answers name its own doors and say the truth about who runs it.

``POST /runs/{id}/resume`` of a nested team's run said the library's words, "resume 'TOP'
(running.resume('TOP') on a team started with that journal, or `regiment resume --journal
... TOP`)": code and a command a client of the service does not have. Now it names
``POST /runs/{top}/resume``. And ``GET /runs/{id}/events`` of the nested run of a top run
this service runs ended with a ``StreamEnd`` saying it ran "in another process that shares
this service's journal"; now it says this service runs its top run, to follow there. Its
``POST /runs/{id}/cancel`` answered ``{"cancelling": false}`` alone; now a ``detail`` says
to cancel the top run.
"""

from __future__ import annotations

from pathlib import Path

import anyio
import httpx2 as httpx
import pytest

from examples.service.serving import serving
from regiment.journal import nested_run_id
from regiment.serve import create_app
from tests.hierarchy.approval_team import Shop, nested_team, plan_json, step
from tests.journal.durable_team import Ledger, make_office
from tests.journal.test_nested_resume import NESTED_GOAL
from tests.serve.sse import run_events

pytestmark = pytest.mark.anyio


async def test_resuming_a_nested_run_says_to_post_the_top_runs_resume(tmp_path: Path) -> None:
    app = create_app(make_office(ledger=Ledger(tmp_path)), journal=str(tmp_path / "runs.db"))
    async with serving(app) as url, httpx.AsyncClient(base_url=url, timeout=60) as c:
        done = (await c.post("/runs?wait=true", json={"goal": NESTED_GOAL})).json()
        top = done["run_id"]
        nested = nested_run_id(top, 1, "t1")
        assert (await c.get(f"/runs/{nested}")).status_code == 200  # a real run of the journal
        answer = await c.post(f"/runs/{nested}/resume")
    assert answer.status_code == 409, answer.text
    detail = answer.json()["detail"]
    assert f"resume {top!r} (POST /runs/{top}/resume)" in detail
    assert "running.resume" not in detail
    assert "regiment resume" not in detail


async def test_the_top_runs_resume_is_named_under_the_apps_prefix(tmp_path: Path) -> None:
    from starlette.applications import Starlette
    from starlette.routing import Mount

    inner = create_app(make_office(ledger=Ledger(tmp_path)), journal=str(tmp_path / "runs.db"))
    outer = Starlette(routes=[Mount("/team", inner)], lifespan=inner.router.lifespan_context)
    async with serving(outer) as url, httpx.AsyncClient(base_url=url, timeout=60) as c:
        done = (await c.post("/team/runs?wait=true", json={"goal": NESTED_GOAL})).json()
        top = done["run_id"]
        answer = await c.post(f"/team/runs/{nested_run_id(top, 1, 't1')}/resume")
    assert answer.status_code == 409, answer.text
    assert f"(POST /team/runs/{top}/resume)" in answer.json()["detail"]


async def test_a_nested_runs_stream_says_this_service_runs_its_top_run(tmp_path: Path) -> None:
    shop = Shop()  # its ``slow`` step waits for ``shop.release``
    team = nested_team(
        shop,
        plan_json(step("d1", "desk", "ask the shop")),
        child_first=plan_json(step("c1", "slow", "slow 1")),
    )
    app = create_app(team, journal=str(tmp_path / "runs.db"))
    async with serving(app) as url, httpx.AsyncClient(base_url=url, timeout=60) as c:
        top = (await c.post("/runs", json={"goal": "go"})).json()["run_id"]
        nested = nested_run_id(top, 1, "d1")
        for _ in range(1_000):  # until the journal has it (the top run's step starts it)
            if (await c.get(f"/runs/{nested}")).status_code == 200:
                break
            await anyio.sleep(0.02)
        frames = await run_events(c, nested)
        cancel = (await c.post(f"/runs/{nested}/cancel")).json()
        shop.release.set()
        last = (await run_events(c, top))[-1]
    end = frames[-1]
    assert end.event == "StreamEnd"
    assert end.data is not None
    assert end.data["status"] == "running"
    detail = str(end.data["detail"])
    assert f"in run {top}, which this service runs" in detail
    assert f"GET /runs/{top}/events follows run {top} live" in detail
    assert "another process" not in detail
    assert last.event == "RunCompleted"
    # It answered {"cancelling": false} alone: nothing done, and nothing said why.
    assert cancel["cancelling"] is False
    assert f"cancelled with that run (POST /runs/{top}/cancel)" in cancel["detail"]
