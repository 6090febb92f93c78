"""A service starts and answers reads while another process holds its journal's write lock.

The service opens its journal as it starts (uvicorn accepts no request before), and that
open wrote (the schema's check-and-create, in a write transaction), so with another
connection holding the SQLite file's write lock even a ``GET /runs`` waited the busy
timeout (30 s), and then the service failed to start ("stayed locked by another
process"). A journal already of this schema needs no write: it is opened without one.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import anyio
import httpx2 as httpx
import pytest

from examples.service.serving import serving
from regiment.journal import SqliteJournal
from regiment.serve import create_app
from tests.hierarchy.approval_team import Shop, shop_team
from tests.journal.records import created, new_id
from tests.serve.test_follow_resuming import PLAN

pytestmark = pytest.mark.anyio


async def test_a_service_reads_its_journal_while_another_holds_the_write_lock(
    tmp_path: Path,
) -> None:
    path, run_id = tmp_path / "runs.db", new_id()
    writer = await SqliteJournal.open(path)
    try:
        await writer.flush(await writer.create_run(created(run_id), owner="other:1", ttl=60))
    finally:
        await writer.close()
    lock = sqlite3.connect(path, isolation_level=None)
    try:
        lock.execute("BEGIN IMMEDIATE")  # another process's write transaction, kept open
        app = create_app(shop_team(Shop(), PLAN), journal=str(path))
        async with serving(app) as url, httpx.AsyncClient(base_url=url, timeout=60) as c:
            with anyio.fail_after(20):  # guards against a hang: the answers are asserted
                listed = await c.get("/runs")
                one = await c.get(f"/runs/{run_id}")
            assert lock.in_transaction  # still held: nothing above waited for it
            lock.execute("ROLLBACK")
            started = await c.post("/runs?wait=true", json={"goal": "refund"})
    finally:
        lock.close()
    assert listed.status_code == 200, listed.text
    assert [r["run_id"] for r in listed.json()["runs"]] == [run_id]
    assert one.status_code == 200, one.text
    assert started.status_code == 200, started.text  # and it writes once the lock is gone
    async with await SqliteJournal.open(path) as journal:
        assert len(await journal.list_runs()) == 2
