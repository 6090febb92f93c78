"""A follower on one service of a run another service runs, when the journal's server
goes down as it is followed: its stream ends with a ``StreamEnd`` saying the journal
could not be read and how to go on (not cut with a traceback from the server), a
WARNING is logged, and a reconnect with its ``Last-Event-ID`` once the server is back
goes on to the run's end. Real uvicorn, httpx and a PostgreSQL server of its own."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator

import anyio
import httpx2 as httpx
import pytest

from examples.service.serving import serving
from regiment.journal import PostgresJournal
from regiment.serve import create_app
from tests.hierarchy.approval_team import Shop, plan_json, shop_team, step
from tests.journal.test_postgres_down import server
from tests.serve.sse import Frame, frames, run_events

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(120)]

__all__ = ("server",)  # the fixture, shared

SLOW = plan_json(step("s1", "slow", "slow 1"))


async def _until(got: list[Frame], events: AsyncIterator[Frame], name: str) -> None:
    """Add the event frames of ``events`` to ``got`` up to the first ``name``."""
    async for frame in events:
        if frame.comment is None:
            got.append(frame)
            if frame.event == name:
                return


async def test_a_follower_is_told_the_journal_failed_and_goes_on_once_it_is_back(
    server: object, caplog: pytest.LogCaptureFixture
) -> None:
    from pg_server import PostgresServer  # (on the path once tests.journal is imported)

    assert isinstance(server, PostgresServer)
    shop = Shop()
    journal = await PostgresJournal.open(server.url, reconnect_timeout=60.0)
    try:
        async with (
            serving(create_app(shop_team(shop, SLOW), journal=server.url)) as one,
            serving(create_app(shop_team(shop, SLOW), journal=journal)) as two,
            httpx.AsyncClient(base_url=two, timeout=60) as c,
        ):
            posted = await c.post(f"{one}/runs", json={"goal": "slow order 1"})
            run_id = posted.json()["run_id"]
            got: list[Frame] = []
            with caplog.at_level(logging.WARNING, logger="regiment.serve"):
                async with c.stream("GET", f"/runs/{run_id}/events") as response:
                    events = frames(response)
                    await _until(got, events, "StepDispatched")
                    await anyio.to_thread.run_sync(server.halt)
                    await _until(got, events, "StreamEnd")
                    rest = [f async for f in events if f.comment is None]
            await anyio.to_thread.run_sync(server.start_again)
            shop.release.set()
            after = await run_events(c, run_id, last=3)
    finally:
        await journal.close()
    *before, end = got
    assert [f.event for f in before] == ["RunStarted", "PlanCreated", "StepDispatched"]
    assert rest == []
    assert (end.event, end.id) == ("StreamEnd", None)
    assert end.data is not None
    assert (end.data["status"], end.data["last_event_id"]) == ("running", 3), end.data
    assert end.data["detail"] == (
        f"this service could not read its journal (JournalError, logged) as it followed run "
        f"{run_id}, which another process runs: once the journal is back, then GET "
        f"/runs/{run_id}/events with Last-Event-ID: 3 for the rest"
    )
    warned = [
        r for r in caplog.records if r.levelno == logging.WARNING and r.name == "regiment.serve"
    ]
    assert any("reading the journal failed (JournalError)" in r.getMessage() for r in warned)
    assert [f.event for f in after] == ["StepCompleted", "SynthesisStarted", "RunCompleted"]
    assert [f.id for f in after] == [4, 5, 6]
