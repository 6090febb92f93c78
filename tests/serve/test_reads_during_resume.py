"""A service's journal reads answer while a resume's start waits for the journal's lock.

Under a real uvicorn and a real SQLite journal whose write lock another connection
holds, ``POST /runs/{id}/resume`` waits in its lease's write (up to the busy timeout,
30 s). ``GET /runs`` (no small ``?limit``), ``GET /approvals`` and ``GET /runs/{id}`` of
another run waited behind it: the journal was read one call at a time. They answer now.
"""

from __future__ import annotations

import logging
import sqlite3
from pathlib import Path

import anyio
import httpx2 as httpx
import pytest

from examples.service.serving import serving
from regiment.serve import create_app
from tests.hierarchy.approval_team import Shop, shop_team
from tests.serve.test_follow_resuming import PLAN, _paused_and_decided, _Said

pytestmark = pytest.mark.anyio


async def test_reads_answer_while_a_resume_waits_for_the_journal_lock(tmp_path: Path) -> None:
    shop, path = Shop(), tmp_path / "runs.db"
    run_id, _ = await _paused_and_decided(path, shop)
    async with (
        serving(create_app(shop_team(shop, PLAN), journal=str(path))) as url,
        httpx.AsyncClient(base_url=url, timeout=60) as c,
    ):
        waiting = (await c.post("/runs?wait=true", json={"goal": "refund"})).json()
    read = "run resuming: its journal read"
    said, logger = _Said(read), logging.getLogger("regiment.serve")
    logger.addHandler(said)
    level = logger.level
    logger.setLevel(logging.DEBUG)
    try:
        app = create_app(shop_team(shop, PLAN), journal=str(path))
        async with serving(app) as url, httpx.AsyncClient(base_url=url, timeout=60) as c:
            await c.get("/runs")  # its journal is open
            lock = sqlite3.connect(path, isolation_level=None)
            lock.execute("BEGIN IMMEDIATE")  # the resume's lease write waits for it
            resumed: list[httpx.Response] = []
            try:
                async with anyio.create_task_group() as tg:

                    async def resume() -> None:
                        resumed.append(await c.post(f"/runs/{run_id}/resume"))

                    tg.start_soon(resume)
                    with anyio.fail_after(20):  # guards against a hang: the answers are asserted
                        await said.heard[read].wait()
                        listed = (await c.get("/runs")).json()
                        approvals = (await c.get("/approvals")).json()
                        other = (await c.get(f"/runs/{waiting['run_id']}")).json()
                    assert not resumed  # the lock held the resume all along
                    lock.execute("ROLLBACK")
            finally:
                lock.close()
            (answer,) = resumed
            assert answer.status_code == 202, answer.text
    finally:
        logger.removeHandler(said)
        logger.setLevel(level)
    assert {r["run_id"] for r in listed["runs"]} == {run_id, waiting["run_id"]}
    (pending,) = waiting["pending_approvals"]
    assert [a["request_id"] for a in approvals["approvals"]] == [pending["request_id"]]
    assert other["status"] == "paused"
