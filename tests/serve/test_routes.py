"""Every route of the app, served by a real uvicorn and driven by an HTTP client."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import httpx2 as httpx
import pytest

from examples.service.serving import serving
from regiment.hierarchy import event_from_json, result_from_json, to_json
from regiment.serve import create_app

from .teams import support_team

pytestmark = pytest.mark.anyio

GOAL = "What is the status of order 77120?"


async def test_health_and_a_run_to_its_result() -> None:
    async with serving(create_app(support_team())) as url, httpx.AsyncClient(base_url=url) as c:
        assert (await c.get("/health")).json() == {"status": "ok"}
        done = await c.post("/runs?wait=true", json={"goal": GOAL, "session": "s-1"})
        assert done.status_code == 200
        body = done.json()
        assert body["status"] == "completed"
        assert body["answer"] == "order 77120: shipped 12 days ago"
        assert body["output"] == {"s1": "order 77120: shipped 12 days ago"}
        assert body["session"] == "s-1"
        assert body["plans"][0]["steps"][0]["id"] == "s1"
        assert body["usage"]["input_tokens"] >= 0
        again = await c.get(f"/runs/{body['run_id']}")
        assert again.json() == body


async def test_post_answers_202_then_list_and_get_follow_the_run() -> None:
    async with serving(create_app(support_team())) as url, httpx.AsyncClient(base_url=url) as c:
        accepted = await c.post("/runs", json={"goal": GOAL})
        assert accepted.status_code == 202
        run_id = accepted.json()["run_id"]
        async with c.stream("GET", f"/runs/{run_id}/events") as events:
            async for _ in events.aiter_lines():  # to the end of the run
                pass
        listed = (await c.get("/runs", params={"status": "completed"})).json()["runs"]
        assert [r["run_id"] for r in listed] == [run_id]
        assert (await c.get("/runs", params={"status": "running"})).json() == {"runs": []}
        assert (await c.get(f"/runs/{run_id}")).json()["status"] == "completed"


async def test_unknown_run_unknown_route_and_approvals() -> None:
    async with serving(create_app(support_team())) as url, httpx.AsyncClient(base_url=url) as c:
        missing = await c.get("/runs/run-404")
        assert missing.status_code == 404
        assert missing.json()["error"] == "unknown run"
        assert (await c.post("/runs/run-404/cancel")).status_code == 404
        assert (await c.get("/runs/run-404/events")).status_code == 404
        nowhere = await c.get("/nowhere")
        assert nowhere.status_code == 404
        assert nowhere.headers["content-type"] == "application/json"
        assert nowhere.json()["error"] == "not found"
        assert nowhere.json()["detail"] == (  # it was Starlette's "Not Found"
            "no route /nowhere; this app serves /health, /runs, /runs/{run_id}, "
            "/runs/{run_id}/events, /runs/{run_id}/cancel, /runs/{run_id}/resume, "
            "/approvals, /approvals/{request_id}"
        )
        assert (await c.get("/approvals")).json() == {"approvals": []}
        unknown = await c.post("/approvals/r-1", json={"decision": "approve"})
        assert unknown.status_code == 404
        assert unknown.json()["detail"] == (
            "no approval request 'r-1'; GET /approvals lists the pending ones"
        )


@pytest.mark.parametrize(
    ("body", "detail"),
    [
        (b"{not json", "malformed"),
        (b'{"session": "x"}', "the field 'goal' (at $.goal) is required but missing"),
        (b'{"goal": 3}', "the field 'goal' (at $.goal) must be a string, not a whole number"),
        (b'{"goal": "g", "colour": "red"}', "the field 'colour' (at $.colour) is not a field this route takes"),
        (b'{"goal": "  "}', "the goal is empty"),
        (b'{"goal": "g", "deps": [1]}', "the field 'deps' (at $.deps) must be a JSON object, not an array"),
        (b'{"goal": "g", "deps": "u-42"}', "the field 'deps' (at $.deps) must be a JSON object, not a string"),
        (b"", 'the body is empty; send {"goal": "..."'),
        (b"  \n", "the body is empty"),
        (b'{"goal": "a\\ud800b"}', "lone UTF-16 surrogate escape (such as \\ud800)"),
        (b'{"goal": "a\\u0000b"}', "the goal holds a NUL character ('\\x00') at position 1"),
        (b'{"goal": "g", "session": "s\\u0000"}', "the session holds a NUL character"),
        (b'{"goal": "g", "session": " "}', "the session is blank (' '); give the id"),
        (b'{"goal": "g", "session": 7}', "the field 'session' (at $.session) must be a string or null, not a whole number"),
        (b'{"goal": "g"', "JSON is cut short (Input data was truncated)"),  # a body cut short
        (b"{", "JSON is cut short (Input data was truncated): send all of it"),
        # JSON of another shape says which shape to send
        (b"null", 'the body must be a JSON object, not null; send {"goal": "...", "session": "..."?, "deps": {...}?}'),
        (b'["g"]', 'the body must be a JSON object, not an array; send {"goal": "..."'),
        (b'{"session": "x"}', 'is required but missing; send {"goal": "..."'),
        (b'{"goal": "g", "colour": "red"}', 'is not a field this route takes; send {"goal": "..."'),
        # was a 500 with a RecursionError traceback in the server's log
        (b'{"goal": "g", "deps": {"a": ' + b"[" * 5000 + b"]" * 5000 + b"}}", "the body's JSON nests too deep to read; send flatter JSON"),
    ],
)  # fmt: skip
async def test_bad_bodies_are_422_with_error_and_detail(body: bytes, detail: str) -> None:
    async with serving(create_app(support_team())) as url, httpx.AsyncClient(base_url=url) as c:
        response = await c.post("/runs", content=body)
        assert response.status_code == 422
        assert set(response.json()) == {"error", "detail"}
        assert detail.lower() in response.json()["detail"].lower()
        assert (await c.get("/runs")).json() == {"runs": []}


@pytest.mark.parametrize(
    ("method", "path", "detail"),
    [
        ("POST", "/runs?wait=yes", "?wait='yes': use true or false"),
        ("POST", "/runs/run-1-00000000/resume?wait=maybe", "?wait='maybe': use true or false"),
        ("GET", "/runs?status=bogus", "?status='bogus': use one of running, stalled, completed"),
        # a parameter the route does not take was ignored: 200, and the run did not wait
        ("POST", "/runs?wiat=true", "POST /runs takes no query parameter 'wiat'; it takes ?wait"),
        ("GET", "/runs?limit=2&stauts=failed", "GET /runs takes no query parameter 'stauts'; it takes ?status, ?limit"),
        ("GET", "/runs/run-1-00000000?full=1", "GET /runs/{id} takes no query parameter 'full'; it takes none"),
        ("GET", "/approvals?run=r", "GET /approvals takes no query parameter 'run'; it takes ?run_id"),
        ("POST", "/runs?wait=true&wait=false", "?wait is given 2 times; give it once"),
    ],
)  # fmt: skip
async def test_a_query_parameter_it_does_not_know_is_422_not_ignored(
    method: str, path: str, detail: str
) -> None:
    async with serving(create_app(support_team())) as url, httpx.AsyncClient(base_url=url) as c:
        response = await c.request(method, path, json={"goal": "g"})
        assert response.status_code == 422, response.text
        assert detail in response.json()["detail"]
        assert (await c.get("/runs")).json() == {"runs": []}  # no run was started


async def test_a_body_over_one_mebibyte_is_413() -> None:
    async with serving(create_app(support_team())) as url, httpx.AsyncClient(base_url=url) as c:
        big = b'{"goal": "' + b"x" * (1024 * 1024) + b'"}'
        assert (await c.post("/runs", content=big)).status_code == 413

        async def chunks() -> AsyncIterator[bytes]:  # no Content-Length: counted as it arrives
            for _ in range(17):
                yield b"x" * 65536

        streamed = await c.post("/runs", content=chunks())
        assert streamed.status_code == 413
        assert streamed.json()["error"] == "body too large"


async def test_token_auth_on_every_route_but_health() -> None:
    app = create_app(support_team(), token="s3cret")
    async with serving(app) as url, httpx.AsyncClient(base_url=url) as c:
        assert (await c.get("/health")).status_code == 200
        for method, path in [("GET", "/runs"), ("POST", "/runs"), ("GET", "/runs/x"),
                             ("GET", "/runs/x/events"), ("POST", "/runs/x/cancel"),
                             ("GET", "/approvals")]:  # fmt: skip
            for header in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": "s3cret"}):
                response = await c.request(method, path, headers=header)
                assert response.status_code == 401, (method, path, header)
                assert "Authorization: Bearer" in response.json()["detail"]
        ok = await c.post(
            "/runs?wait=true", json={"goal": GOAL}, headers={"Authorization": "Bearer s3cret"}
        )
        assert ok.status_code == 200


async def test_the_result_round_trips_through_to_json() -> None:
    team = support_team()
    result = await team.run(GOAL)
    assert result_from_json(to_json(result)) == result
    assert [event_from_json(to_json(e)) for e in result.events] == list(result.events)


async def test_every_route_names_an_unknown_run_alike(tmp_path: Path) -> None:
    # POST .../resume answered {"error": "no such run"} where the others say "unknown run".
    app = create_app(support_team(), journal=str(tmp_path / "runs.db"))
    async with serving(app) as url, httpx.AsyncClient(base_url=url) as c:
        routes = [("GET", ""), ("GET", "/events"), ("POST", "/cancel"), ("POST", "/resume")]
        answers = [await c.request(method, f"/runs/run-404{route}") for method, route in routes]
    for answer in answers:
        assert answer.status_code == 404
        assert answer.json() == {
            "error": "unknown run",
            "detail": "no run 'run-404'; GET /runs lists them",
        }
