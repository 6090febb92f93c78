"""What ``POST /runs/{id}/resume`` answers when it cannot resume, under a real uvicorn.

A run that has finished was answered with the library's words: ``regiment show --journal
/srv/data/runs.db RUN_ID`` (the server's own file path, and a command its HTTP client
cannot run) and ``in code, journal.get_run(...)``; it now names ``GET /runs/{id}``, as the
service's other answers do. A journal whose server is down was a 409 ``cannot resume``
(as if the run could never be resumed) and logged nothing; it is now the 503 ``journal
unavailable`` every other route answers, logged at ERROR, and the resume works once the
server is back.
"""

from __future__ import annotations

import logging
from pathlib import Path

import anyio
import httpx2 as httpx
import pytest

from examples.service.serving import serving
from regiment.journal import PostgresJournal
from regiment.serve import create_app
from tests.hierarchy.approval_team import Shop, plan_json, shop_team, step
from tests.journal.test_postgres_down import server

pytestmark = pytest.mark.anyio

__all__ = ("server",)  # the fixture, shared


async def _paused_and_approved(c: httpx.AsyncClient) -> str:
    paused = (await c.post("/runs?wait=true", json={"goal": "refund"})).json()
    assert paused["status"] == "paused"
    (request,) = paused["pending_approvals"]
    decided = await c.post(f"/approvals/{request['request_id']}", json={"decision": "approve"})
    assert decided.status_code == 200, decided.text
    return str(paused["run_id"])


async def test_a_finished_run_is_named_with_the_route_that_shows_it(tmp_path: Path) -> None:
    shop = Shop()
    path = tmp_path / "secret-place" / "runs.db"
    path.parent.mkdir()
    app = create_app(
        shop_team(shop, plan_json(step("s1", "billing", "refund 3 10"))), journal=str(path)
    )
    async with serving(app) as url, httpx.AsyncClient(base_url=url) as c:
        run_id = await _paused_and_approved(c)
        assert (await c.post(f"/runs/{run_id}/resume?wait=true")).json()["status"] == "completed"
        again = await c.post(f"/runs/{run_id}/resume")
    assert again.status_code == 409
    assert again.json() == {
        "error": "cannot resume",
        "detail": f"run {run_id!r} has already finished (completed); there is nothing to "
        f"resume: GET /runs/{run_id} shows it",
    }
    assert shop.refunds == [("3", 10)]


async def test_a_resume_while_the_journal_is_down_is_503_and_works_once_it_is_back(
    server: object, caplog: pytest.LogCaptureFixture
) -> None:
    from pg_server import PostgresServer  # (on the path once tests.journal is imported)

    assert isinstance(server, PostgresServer)
    shop = Shop()
    journal = await PostgresJournal.open(server.url, reconnect_timeout=1.0)
    team = shop_team(shop, plan_json(step("s1", "billing", "refund 3 10")))
    try:
        async with (
            serving(create_app(team, journal=journal)) as url,
            httpx.AsyncClient(base_url=url, timeout=60) as c,
        ):
            run_id = await _paused_and_approved(c)
            await anyio.to_thread.run_sync(server.halt)
            with caplog.at_level(logging.ERROR, logger="regiment"):
                down = await c.post(f"/runs/{run_id}/resume")
            await anyio.to_thread.run_sync(server.start_again)
            resumed = await c.post(f"/runs/{run_id}/resume?wait=true")
    finally:
        await journal.close()
    assert down.status_code == 503, down.text
    assert down.json()["error"] == "journal unavailable"
    assert down.json()["detail"].endswith("; try again once it is back")
    assert any(
        r.levelno == logging.ERROR and "journal unavailable" in r.getMessage()
        for r in caplog.records
    )
    assert resumed.status_code == 200, resumed.text
    assert resumed.json()["status"] == "completed"
    assert shop.refunds == [("3", 10)]
