"""``POST /runs/{id}/resume`` of a nested team's run, under a real uvicorn and a real SQLite
journal: the 409 names the service's own door, ``POST /runs/{top}/resume``.

It said the library's words, "resume 'TOP' (running.resume('TOP') on a team started with
that journal, or `regiment resume --journal ... TOP`)": code and a command a client of the
service does not have.
"""

from __future__ import annotations

from pathlib import Path

import httpx2 as httpx
import pytest

from examples.service.serving import serving
from regiment.journal import nested_run_id
from regiment.serve import create_app
from tests.journal.durable_team import Ledger, make_office
from tests.journal.test_nested_resume import NESTED_GOAL

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
    nested = nested_run_id("run-1-00000000", 1, "t1")
    async with serving(outer) as url, httpx.AsyncClient(base_url=url, timeout=60) as c:
        answer = await c.post(f"/team/runs/{nested}/resume")
    assert answer.status_code == 409, answer.text
    assert "(POST /team/runs/run-1-00000000/resume)" in answer.json()["detail"]
