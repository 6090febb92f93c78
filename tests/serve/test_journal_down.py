"""``regiment serve``'s reads while its PostgreSQL journal's server is down.

``GET /runs`` and ``GET /runs/{id}`` of a run the service does not hold in memory read
the journal: they waited for the server (up to ``reconnect_timeout``) before answering;
they now answer 503 ``journal unavailable`` at once, and 200 again once it is back.
"""

from __future__ import annotations

import anyio
import httpx2 as httpx
import pytest

from examples.service.serving import serving
from regiment.journal import PostgresJournal
from regiment.serve import create_app
from tests.journal.test_postgres_down import server

from .teams import support_team

pytestmark = pytest.mark.anyio

__all__ = ("server",)  # the fixture, shared

GOAL = "What is the status of order 88213?"


async def test_reads_answer_503_at_once_while_the_server_is_down(server: object) -> None:
    from pg_server import PostgresServer  # (on the path once tests.journal is imported)

    assert isinstance(server, PostgresServer)
    journal = await PostgresJournal.open(server.url, reconnect_timeout=60.0)
    try:
        async with (
            serving(create_app(support_team(), journal=journal)) as url,
            httpx.AsyncClient(base_url=url) as c,
        ):
            posted = await c.post("/runs?wait=true", json={"goal": GOAL})
            assert posted.json()["status"] == "completed"
            await anyio.to_thread.run_sync(server.halt)
            for path in ("/runs", "/runs/run-from-elsewhere"):
                down = await c.get(path)
                assert down.status_code == 503, path
                assert down.json()["error"] == "journal unavailable"
                assert "the server cannot be reached" in down.json()["detail"]
            await anyio.to_thread.run_sync(server.start_again)
            listed = await c.get("/runs")
            assert [run["run_id"] for run in listed.json()["runs"]] == [posted.json()["run_id"]]
            assert (await c.get("/runs/run-from-elsewhere")).status_code == 404
    finally:
        await journal.close()
