"""Every route that names a run answers an id that names none with 404 ``unknown run``,
under a real uvicorn and a real SQLite journal, and a finished run with what it is.

``POST /runs/{id}/resume`` of an id shaped like a nested team's run (``TOP~v1-t9``) that
the journal does not have answered 409 "it is resumed with that run (POST
/runs/TOP/resume)", as if the run were there; and ``GET /approvals?run_id=`` of a run
no one has answered ``{"approvals": []}``, as for a run that waits for nothing, so a
client with a mistyped id read "no pending requests" forever. An id with a NUL in it
(``/runs/a%00b``) was a 503 ``journal unavailable`` on PostgreSQL, logged at ERROR (its
text cannot hold a NUL), and a 409 ``cannot resume`` saying the same.
"""

from __future__ import annotations

from pathlib import Path

import httpx2 as httpx
import pytest

from examples.service.serving import serving
from regiment.journal import nested_run_id
from regiment.serve import create_app
from tests.journal.durable_team import Ledger, make_office
from tests.journal.test_nested_resume import NESTED_GOAL
from tests.serve.sse import run_events

pytestmark = pytest.mark.anyio


async def _asked(c: httpx.AsyncClient, run_id: str) -> dict[str, httpx.Response]:
    """Each route that names a run, asked about ``run_id`` (as it goes in a URL)."""
    return {
        "GET /runs/{id}": await c.get(f"/runs/{run_id}"),
        "GET /runs/{id}/events": await c.get(f"/runs/{run_id}/events"),
        "POST /runs/{id}/cancel": await c.post(f"/runs/{run_id}/cancel"),
        "POST /runs/{id}/resume": await c.post(f"/runs/{run_id}/resume"),
        "GET /approvals?run_id": await c.get(f"/approvals?run_id={run_id}"),
    }


async def test_every_route_answers_an_unknown_or_absent_nested_id_404(tmp_path: Path) -> None:
    app = create_app(make_office(ledger=Ledger(tmp_path)), journal=str(tmp_path / "runs.db"))
    async with serving(app) as url, httpx.AsyncClient(base_url=url, timeout=60) as c:
        top = (await c.post("/runs?wait=true", json={"goal": NESTED_GOAL})).json()["run_id"]
        absent = nested_run_id(top, 1, "t9")  # its top run is there; no step t9 ever ran
        answers = {run_id: await _asked(c, run_id) for run_id in ("run-1-00000000", absent)}
        decided = await c.post("/approvals/apr-nope", json={"decision": "approve"})
    for run_id, asked in answers.items():
        for route, answer in asked.items():
            assert (route, answer.status_code) == (route, 404), answer.text
            assert answer.json() == {
                "error": "unknown run",
                "detail": f"no run {run_id!r}; GET /runs lists them",
            }
    assert decided.status_code == 404


async def test_a_finished_run_and_its_nested_run_are_answered_as_they_are(
    tmp_path: Path,
) -> None:
    app = create_app(make_office(ledger=Ledger(tmp_path)), journal=str(tmp_path / "runs.db"))
    async with serving(app) as url, httpx.AsyncClient(base_url=url, timeout=60) as c:
        top = (await c.post("/runs?wait=true", json={"goal": NESTED_GOAL})).json()["run_id"]
        nested = nested_run_id(top, 1, "t1")
        asked = {run_id: await _asked(c, run_id) for run_id in (top, nested)}
        frames = {run_id: await run_events(c, run_id) for run_id in (top, nested)}
    for run_id in (top, nested):
        answers = asked[run_id]
        assert answers["GET /runs/{id}"].json()["status"] == "completed"
        assert frames[run_id][-1].event == "RunCompleted"
        cancel = answers["POST /runs/{id}/cancel"]
        assert (cancel.status_code, cancel.json()["cancelling"]) == (202, False)
        assert answers["GET /approvals?run_id"].json() == {"approvals": []}
    assert asked[top]["POST /runs/{id}/resume"].status_code == 409
    assert "finished" in asked[top]["POST /runs/{id}/resume"].json()["detail"]
    resume_nested = asked[nested]["POST /runs/{id}/resume"]
    assert resume_nested.status_code == 409
    assert f"(POST /runs/{top}/resume)" in resume_nested.json()["detail"]


async def test_an_id_no_journal_can_hold_is_an_unknown_run(journal: str, tmp_path: Path) -> None:
    app = create_app(make_office(ledger=Ledger(tmp_path)), journal=journal)
    async with serving(app) as url, httpx.AsyncClient(base_url=url, timeout=60) as c:
        asked = {
            run_id: await _asked(c, run_id)
            for run_id in ("a%00b", "%ED%A0%80")  # a NUL; not UTF-8 (a lone surrogate)
        }
        decided = await c.post("/approvals/a%00b", json={"decision": "approve"})
    for answers in asked.values():
        for route, answer in answers.items():
            assert (route, answer.status_code) == (route, 404), answer.text
            assert answer.json()["error"] == "unknown run"
    assert decided.status_code == 404, decided.text


LONG = "run-1-" + "x" * 4994 + "-the-end"  # 5,008 characters
LONG_SHOWN = f"{LONG[:48] + '…' + LONG[-16:]!r} (5,008 characters)"


async def test_a_very_long_id_or_value_is_named_cut_not_repeated_in_full(tmp_path: Path) -> None:
    """A 404's detail repeated a 5,000-character run id in full (and the 404 of a path, the
    422 of a query parameter, its name in ``error`` too): now its start, its end and how
    long it was."""
    app = create_app(make_office(ledger=Ledger(tmp_path)), journal=str(tmp_path / "runs.db"))
    async with serving(app) as url, httpx.AsyncClient(base_url=url, timeout=60) as c:
        asked = await _asked(c, LONG)
        request = await c.post(f"/approvals/{LONG}", json={"decision": "approve"})
        route = await c.get(f"/nowhere/{LONG}")
        query = await c.get("/runs", params={LONG: "1"})
        status = await c.get("/runs", params={"status": LONG})
        limit = await c.get("/runs", params={"limit": LONG})
    for answer in asked.values():
        assert answer.status_code == 404
        assert answer.json()["detail"] == f"no run {LONG_SHOWN}; GET /runs lists them"
    assert request.status_code == 404
    assert request.json()["detail"] == (
        f"no approval request {LONG_SHOWN}; GET /approvals lists the pending ones"
    )
    cut_path = f"/nowhere/{LONG}"
    assert route.json()["detail"].startswith(
        f"no route {cut_path[:48]}…{cut_path[-16:]} (5,017 characters); this app serves "
    )
    assert query.status_code == 422
    assert query.json()["error"] == f"unknown ?{LONG[:48]}…{LONG[-16:]} (5,008 characters)"
    assert f"no query parameter {LONG_SHOWN};" in query.json()["detail"]
    assert status.json()["detail"].startswith(f"?status={LONG_SHOWN}: use one of ")
    assert limit.json()["detail"] == f"?limit={LONG_SHOWN}: use a whole number of 1 or more"
    for answer in (*asked.values(), request, route, query, status, limit):
        assert len(answer.content) < 600, answer.text
