"""The app under trio (served by hypercorn), mounted under a prefix in a Starlette app."""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
import httpx2 as httpx
import pytest
from hypercorn.config import Config
from hypercorn.trio import serve
from starlette.applications import Starlette
from starlette.routing import Mount

from regiment.serve import create_app

from .sse import frames
from .teams import Stuck, stuck_team, support_team

GOAL = "What is the status of order 77120?"
SCAN = "Please scan the warehouse for order 55001."


@pytest.mark.parametrize("anyio_backend", ["trio"])
@pytest.mark.anyio
async def test_mounted_under_a_prefix_on_trio_through_hypercorn() -> None:
    stuck = Stuck()
    api = create_app(support_team(), token="t0k")
    scans = create_app(stuck_team(stuck))

    @asynccontextmanager
    async def both(app: Starlette) -> AsyncIterator[None]:
        # Starlette does not run a mounted app's lifespan: the outer app runs both.
        async with api.router.lifespan_context(app), scans.router.lifespan_context(app):
            yield

    outer = Starlette(routes=[Mount("/agents", app=api), Mount("/scans", app=scans)], lifespan=both)
    config = Config()
    config.bind = ["127.0.0.1:0"]
    shutdown = anyio.Event()
    async with anyio.create_task_group() as tg:
        (url,) = await tg.start(
            functools.partial(serve, outer, config, shutdown_trigger=shutdown.wait)  # type: ignore[arg-type]
        )
        auth = {"Authorization": "Bearer t0k"}
        async with httpx.AsyncClient(base_url=url) as c:
            assert (await c.get("/agents/health")).json() == {"status": "ok"}
            assert (await c.post("/agents/runs", json={"goal": GOAL})).status_code == 401
            done = await c.post("/agents/runs?wait=true", json={"goal": GOAL}, headers=auth)
            assert done.json()["answer"] == "order 77120: shipped 12 days ago"
            run_id = done.json()["run_id"]
            async with c.stream("GET", f"/agents/runs/{run_id}/events", headers=auth) as r:
                got = [f.event async for f in frames(r) if f.comment is None]
            assert got[0] == "RunStarted"
            assert got[-1] == "RunCompleted"
            assert (await c.get("/agents/nowhere", headers=auth)).status_code == 404
            # Cancel on trio: the tool is cancelled.
            scan = (await c.post("/scans/runs", json={"goal": SCAN})).json()["run_id"]
            await stuck.started.wait()
            assert (await c.post(f"/scans/runs/{scan}/cancel")).status_code == 202
            await stuck.cancelled.wait()
            async with c.stream("GET", f"/scans/runs/{scan}/events") as r:
                last = [f async for f in frames(r) if f.comment is None][-1]
            assert last.event == "RunFailed"
        shutdown.set()
