"""A cancel of a run stalled mid-work that another process takes up between the
service's read of its status and the cancel's own lease: 409, saying where it runs.

The order is forced with PostgreSQL's row locks, not by hooking the service: a session
of the test's holds the run's row (``FOR UPDATE``); another process's ``acquire`` (a
second journal, the public API) queues on it first, then the service's cancel (it read
``stalled``: a read does not wait for a row lock) queues behind it. The row let go of,
the first in the queue takes the lease, and the cancel finds it held (``LeaseHeld``).
"""

from __future__ import annotations

import re

import anyio
import httpx2 as httpx
import psycopg
import pytest

from examples.service.serving import serving
from regiment.journal import PostgresJournal
from regiment.serve import create_app
from tests.hierarchy.approval_team import Shop, shop_team
from tests.journal.records import created, new_id
from tests.serve.journals import PLAN

pytestmark = pytest.mark.anyio

_WAITING = (  # the sessions waiting for a lock on the run's row (or its tuple)
    "SELECT count(*) FROM pg_stat_activity WHERE pid <> pg_backend_pid()"
    " AND wait_event_type = 'Lock' AND query LIKE '%%journal_runs%%'"
)


async def _until_waiting(url: str, count: int) -> None:
    """Once ``count`` sessions wait for a lock on the journal's runs."""
    with anyio.fail_after(30):  # (a hang guard)
        while True:
            with psycopg.connect(url, autocommit=True) as admin:
                row = admin.execute(_WAITING.encode()).fetchone()
            if row is not None and row[0] >= count:
                return
            await anyio.sleep(0.02)


async def test_a_stalled_run_taken_up_as_the_cancel_came_is_a_409_naming_its_owner(
    postgres_url: str,
) -> None:
    run_id = new_id()
    owner = await PostgresJournal.open(postgres_url)
    other = await PostgresJournal.open(postgres_url)  # the process that takes it up
    try:
        await owner.create_run(created(run_id), owner="frozen:1", ttl=1.0)  # (it lapses)
        app = create_app(shop_team(Shop(), PLAN), journal=postgres_url)
        async with serving(app) as url, httpx.AsyncClient(base_url=url, timeout=60) as c:
            with anyio.fail_after(20):  # a guard: the lease runs out after 1 s
                while (await c.get(f"/runs/{run_id}")).json()["status"] != "stalled":
                    pass
            holder = psycopg.connect(postgres_url)
            try:
                holder.execute(
                    b"SELECT 1 FROM journal_runs WHERE run_id = %s FOR UPDATE", (run_id,)
                )
                answers: dict[str, object] = {}
                async with anyio.create_task_group() as tg:

                    async def take_up() -> None:
                        answers["lease"] = await other.acquire(run_id, owner="other:2", ttl=60)

                    async def cancel() -> None:
                        answers["cancel"] = await c.post(f"/runs/{run_id}/cancel")

                    tg.start_soon(take_up)
                    await _until_waiting(postgres_url, 1)
                    tg.start_soon(cancel)
                    await _until_waiting(postgres_url, 2)
                    holder.rollback()  # the row let go of: the first in the queue takes it
            finally:
                holder.close()
            view = (await c.get(f"/runs/{run_id}")).json()
        assert (await other.get_run(run_id)).status == "running"  # taken up, not cancelled
    finally:
        await other.close()
        await owner.close()
    cancelled = answers["cancel"]
    assert isinstance(cancelled, httpx.Response)
    assert cancelled.status_code == 409, cancelled.text
    body = cancelled.json()
    assert body["error"] == "cannot cancel", body
    assert f"run {run_id} is no longer stalled: " in body["detail"], body
    said = (  # who holds it, and one thing to do (not a resume's "retry in 59 s")
        f"run {run_id} is no longer stalled: another process took it up just as this cancel "
        f"came (run '{run_id}' is owned by 'other:2', whose lease is alive for another "
        "SECONDS s); to cancel it, post the cancel to the service of that process"
    )
    pattern = re.escape(said).replace("SECONDS", r"\d+\.\d")
    assert re.fullmatch(pattern, body["detail"]), body
    assert view["status"] == "running", view
