"""A browser's ``EventSource`` cannot send ``Authorization``: with a token, a run's answer
carries an ``events_ticket`` that reads that run's events (``?ticket=``) and nothing else,
so the token itself never goes into a URL. Before, such a client could not follow a run."""

from __future__ import annotations

import hashlib
import hmac

import httpx2 as httpx
import pytest

from examples.service.serving import serving
from regiment.serve import create_app

from .sse import frames
from .teams import support_team

pytestmark = pytest.mark.anyio

GOAL = "What is the status of order 77120?"
AUTH = {"Authorization": "Bearer s3cret"}


async def _events(c: httpx.AsyncClient, path: str) -> list[str | None]:
    async with c.stream("GET", path) as response:  # no Authorization header, as EventSource
        assert response.status_code == 200, await response.aread()
        return [f.event async for f in frames(response) if f.comment is None]


async def test_a_ticket_reads_its_runs_events_and_nothing_else() -> None:
    async with (
        serving(create_app(support_team(), token="s3cret")) as url,
        httpx.AsyncClient(base_url=url) as c,
    ):
        started = (await c.post("/runs", json={"goal": GOAL}, headers=AUTH)).json()
        other = (await c.post("/runs?wait=true", json={"goal": GOAL}, headers=AUTH)).json()
        run_id, ticket = started["run_id"], started["events_ticket"]
        shown = (await c.get(f"/runs/{run_id}", headers=AUTH)).json()
        followed = await _events(c, f"/runs/{run_id}/events?ticket={ticket}")
        elsewhere = [
            await c.get(f"/runs/{other['run_id']}/events?ticket={ticket}"),
            await c.get(f"/runs/{run_id}?ticket={ticket}"),
            await c.get(f"/runs?ticket={ticket}"),
            await c.post(f"/runs/{run_id}/cancel?ticket={ticket}"),
        ]
        forged = await c.get(f"/runs/{run_id}/events?ticket={'0' * 64}")
        with_header = await c.get(f"/runs/{run_id}/events?ticket=wrong", headers=AUTH)
    expected = hmac.new(b"s3cret", f"events {run_id}".encode(), hashlib.sha256).hexdigest()
    assert ticket == expected == shown["events_ticket"]
    assert other["events_ticket"] != ticket  # a ticket is one run's: `other` has its own
    assert followed[0] == "RunStarted"
    assert followed[-1] == "RunCompleted"
    assert [r.status_code for r in elsewhere] == [401, 401, 401, 401]
    assert "the ticket is not this run's" in elsewhere[0].json()["detail"]
    assert forged.status_code == 401
    assert with_header.status_code == 200  # the token is enough whatever the ticket says


async def test_without_a_token_there_is_no_ticket_and_none_is_needed() -> None:
    async with serving(create_app(support_team())) as url, httpx.AsyncClient(base_url=url) as c:
        started = (await c.post("/runs", json={"goal": GOAL})).json()
        followed = await _events(c, f"/runs/{started['run_id']}/events?ticket=anything")
    assert started == {"run_id": started["run_id"]}
    assert followed[-1] == "RunCompleted"
