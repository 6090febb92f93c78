"""``GET /runs/{id}`` of a run whose journal holds an event this regiment cannot read
(another program's, or a newer regiment's kind): it answered 500; now it answers with
what it can read, a ``not_shown`` note per event left out (as ``regiment show`` notes
it), and a WARNING on ``regiment.serve``; its events stream and the listing work too,
and a resume is a 409 that says why (it was a 500) (real uvicorn + httpx, a real SQLite file and a real PostgreSQL server)."""

from __future__ import annotations

import logging

import httpx2 as httpx
import msgspec
import pytest

from examples.service.serving import serving
from regiment._json import JsonValue
from regiment.hierarchy import RunStarted
from regiment.journal import EventRecorded, open_journal
from regiment.serve import create_app
from tests.journal.records import created, new_id
from tests.serve.sse import run_events
from tests.serve.teams import support_team

pytestmark = pytest.mark.anyio


async def _foreign_run(journal: str) -> str:
    """A run whose journal has its ``RunStarted``, then an event of a kind regiment lacks,
    and that ran in a process that has stopped (it lists ``stalled``)."""
    run_id, writer = new_id(), await open_journal(journal)
    try:
        lease = await writer.create_run(created(run_id), owner="other:1", ttl=30)
        started = RunStarted(run_id=run_id, goal="refund 88213", team="support")
        body = msgspec.to_builtins(started)
        await writer.append(lease, EventRecorded(run_id=run_id, kind="RunStarted", event=body))
        foreign: dict[str, JsonValue] = {"type": "MoodChanged", "run_id": run_id, "mood": "sunny"}
        await writer.append(lease, EventRecorded(run_id=run_id, kind="MoodChanged", event=foreign))
        await writer.release(lease)
    finally:
        await writer.close()
    return run_id


async def test_a_run_with_an_event_regiment_cannot_read_is_shown_with_a_note(
    journal: str, caplog: pytest.LogCaptureFixture
) -> None:
    run_id = await _foreign_run(journal)
    async with (
        serving(create_app(support_team(), journal=journal)) as url,
        httpx.AsyncClient(base_url=url, timeout=60) as c,
    ):
        with caplog.at_level(logging.WARNING, logger="regiment.serve"):
            got = await c.get(f"/runs/{run_id}")
        events = await run_events(c, run_id)
        listed = (await c.get("/runs")).json()["runs"]
        resumed = await c.post(f"/runs/{run_id}/resume")  # it answered 500 too
        after = (await c.get(f"/runs/{run_id}")).json()["status"]
    assert got.status_code == 200, got.text
    view = got.json()
    assert (view["status"], view["events"]) == ("stalled", 1), view
    (note,) = view["not_shown"]
    assert note.startswith("its journal's event 2 ('MoodChanged') could not be read ("), note
    assert note.endswith("it is left out (the events after it are numbered without it)"), note
    assert any(
        r.levelno == logging.WARNING and r.name == "regiment.serve" and note in r.getMessage()
        for r in caplog.records
    )
    assert [e.event for e in events] == ["RunStarted", "StreamEnd"]
    assert [r["run_id"] for r in listed] == [run_id]
    assert resumed.status_code == 409, resumed.text
    assert resumed.json()["error"] == "cannot resume"
    assert "journal holds a record this regiment cannot read" in resumed.json()["detail"]
    assert after == "stalled"  # the refused resume changed nothing
