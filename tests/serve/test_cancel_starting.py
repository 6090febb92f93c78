"""A cancel that comes while a resume is starting (before the run has registered) stops
the run as it starts, under a real uvicorn and a real SQLite journal whose write lock
another connection holds, so the resume waits in its lease's write."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import anyio
import httpx2 as httpx
import pytest

from examples.service.serving import serving
from regiment.serve import create_app
from tests.hierarchy.approval_team import Shop, plan_json, shop_team, step
from tests.serve.sse import run_events

pytestmark = pytest.mark.anyio


async def test_a_cancel_while_a_resume_starts_stops_the_run_as_it_starts(tmp_path: Path) -> None:
    # It answered "cancelling": false (no cancel scope yet) and the resumed run went on.
    shop, path = Shop(), tmp_path / "runs.db"
    plan = plan_json(
        step("s1", "billing", "refund 2 500"),
        {**step("s2", "slow", "slow 1"), "depends_on": ["s1"]},
    )
    app = create_app(shop_team(shop, plan), journal=str(path))
    async with serving(app) as url, httpx.AsyncClient(base_url=url, timeout=60) as c:
        paused = (await c.post("/runs?wait=true", json={"goal": "refund, then slow"})).json()
        run_id = paused["run_id"]
        (asked,) = paused["pending_approvals"]
        await c.post(f"/approvals/{asked['request_id']}", json={"decision": "approve"})
        lock = sqlite3.connect(path, isolation_level=None)
        lock.execute("BEGIN IMMEDIATE")  # the resume's first write (its lease) waits for it
        resumed: list[httpx.Response] = []
        try:
            async with anyio.create_task_group() as tg:

                async def resume() -> None:
                    resumed.append(await c.post(f"/runs/{run_id}/resume"))

                tg.start_soon(resume)
                with anyio.fail_after(20):  # a guard against a hang: it asserts below
                    # Until the resume has begun (a read: the lock does not hold it). A
                    # cancel before it would cancel the run as it waits (its requests
                    # decided, not resumed): in its own lease's write, which the lock holds.
                    while (await c.get(f"/runs/{run_id}")).json()["status"] != "running":
                        pass
                    cancel = await c.post(f"/runs/{run_id}/cancel")
                    assert cancel.json() == {"run_id": run_id, "cancelling": True}
                    assert not resumed  # the run had not registered: the lock holds it
                    lock.execute("ROLLBACK")
        finally:
            lock.close()
        (answer,) = resumed
        assert answer.status_code == 202, answer.text
        last = (await run_events(c, run_id))[-1]
        assert last.data is not None
        assert (last.event, last.data["error_type"]) == ("RunFailed", "RunCancelled")
        assert (await c.get(f"/runs/{run_id}")).json()["status"] == "cancelled"
    assert shop.refunds == []  # the approved refund was never issued: the run stopped
    assert shop.slow_done == []
