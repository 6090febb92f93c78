"""Live events over SSE: replay, reconnect with Last-Event-ID, keep-alive, cancel."""

from __future__ import annotations

import functools
import json

import anyio
import httpx2 as httpx
import pytest

from examples.service.serving import serving
from regiment.errors import ConfigError
from regiment.hierarchy import RunFailed, event_from_json
from regiment.serve import MemoryRunStore, create_app

from .sse import Frame, frames, run_events
from .teams import Stuck, stuck_team, support_team

pytestmark = pytest.mark.anyio

GOAL = "What is the status of order 88213?"
SCAN = "Please scan the warehouse for order 55001."


async def test_events_replay_in_order_and_end_after_the_terminal_event() -> None:
    async with serving(create_app(support_team())) as url, httpx.AsyncClient(base_url=url) as c:
        run_id = (await c.post("/runs", json={"goal": GOAL})).json()["run_id"]
        got = await run_events(c, run_id)
        assert [f.id for f in got] == list(range(1, len(got) + 1))
        assert got[0].event == "RunStarted"
        assert got[-1].event == "RunCompleted"
        for frame in got:  # each data is the event's JSON, named by its type
            assert frame.data is not None
            assert frame.data["type"] == frame.event
            assert frame.data["run_id"] == run_id
            event = event_from_json(json.dumps(frame.data))
            assert type(event).__name__ == frame.event
        assert (await c.get(f"/runs/{run_id}")).json()["events"] == len(got)


async def test_a_reconnect_with_last_event_id_gets_exactly_the_rest() -> None:
    async with serving(create_app(support_team())) as url, httpx.AsyncClient(base_url=url) as c:
        run_id = (await c.post("/runs", json={"goal": GOAL})).json()["run_id"]
        first: list[Frame] = []
        async with c.stream("GET", f"/runs/{run_id}/events") as response:
            async for frame in frames(response):
                if frame.comment is None:
                    first.append(frame)
                if len(first) == 3:
                    break  # the client drops the connection here
        rest = await run_events(c, run_id, last=first[-1].id)
        whole = await run_events(c, run_id)
        assert [f.id for f in first + rest] == [f.id for f in whole]
        assert first + rest == whole
        # as EventSource polyfills reconnect: the last id in the query (a 422 once the
        # route refused query parameters it does not take)
        async with c.stream("GET", f"/runs/{run_id}/events?lastEventId={first[-1].id}") as r:
            assert [f async for f in frames(r) if f.comment is None] == rest
        # A superscript two (b"\xb2") is a digit to str.isdigit(), not to int(), and int()
        # refuses 5,000 digits: both broke the stream they had started with a 500.
        for bad in (b"three", b"\xb2", b"-1"):
            refused = await c.get(f"/runs/{run_id}/events", headers={b"Last-Event-ID": bad})
            assert refused.status_code == 422
            assert refused.json()["error"] == "invalid Last-Event-ID"
        # Past the run's last event: it was a 200 with an empty stream, which ends as a cut
        # one does (no last event), so a client reconnected with it again and again.
        total = whole[-1].id
        assert total is not None
        for past in (str(total + 1), "9" * 5000):
            refused = await c.get(f"/runs/{run_id}/events", headers={"Last-Event-ID": past})
            assert refused.status_code == 422
            shown = past if len(past) < 30 else "9" * 30 + "…"
            assert refused.json() == {
                "error": "invalid Last-Event-ID",
                "detail": f"Last-Event-ID {shown} is past the run's last event, {total}: send "
                "the id of the last event the stream gave you (or none, for all of it)",
            }
        # The last one: nothing more, ever. It was a 200 with an empty stream, so a browser's
        # EventSource (which reconnects whenever a stream ends) came again every few seconds
        # for as long as its page stayed open; a 204 tells it to stop.
        done = await c.get(f"/runs/{run_id}/events", headers={"Last-Event-ID": str(total)})
        assert (done.status_code, done.content) == (204, b"")


async def test_an_idle_stream_sends_keep_alive_comments_then_cancel_ends_it() -> None:
    stuck = Stuck()
    app = create_app(stuck_team(stuck), keepalive=0.05)
    async with serving(app) as url, httpx.AsyncClient(base_url=url) as c:
        run_id = (await c.post("/runs", json={"goal": SCAN})).json()["run_id"]
        await stuck.started.wait()
        seen: list[Frame] = []
        pings = 0
        async with c.stream("GET", f"/runs/{run_id}/events") as response:
            async for frame in frames(response):
                seen.append(frame)
                if frame.comment is None or not frame.comment.startswith("ping"):
                    continue
                pings += 1
                if pings == 1:
                    # Cancel once, at the first ping: the run winds down after it and
                    # more pings may come before its last event (under load they did,
                    # and a second cancel of a run already over says cancelling False).
                    cancel = await c.post(f"/runs/{run_id}/cancel")
                    assert cancel.status_code == 202
                    assert cancel.json() == {"run_id": run_id, "cancelling": True}
        assert pings >= 1
        await stuck.cancelled.wait()  # the tool itself was cancelled
        events = [f for f in seen if f.comment is None]
        assert events[-1].event == "RunFailed"
        assert events[-1].data is not None
        assert events[-1].data["error_type"] == "RunCancelled"
        view = (await c.get(f"/runs/{run_id}")).json()
        assert view["status"] == "cancelled"
        again = (await c.post(f"/runs/{run_id}/cancel")).json()
        assert (again["cancelling"], again["status"]) == (False, "cancelled"), again
        assert again["detail"].startswith(f"run {run_id} has already ended (cancelled)")


@pytest.mark.parametrize("keepalive", [-1, 0, float("nan"), float("inf"), True])
def test_create_app_refuses_a_keepalive_no_stream_can_use(keepalive: float) -> None:
    # -1 was taken, and then every GET /runs/{id}/events was a 500 (a ValueError of the
    # SSE response); 0, nan and inf never sent a keep-alive comment.
    with pytest.raises(ConfigError, match="keepalive must be a finite number of seconds > 0"):
        create_app(support_team(), keepalive=keepalive)


async def test_a_client_that_leaves_a_waiting_post_cancels_its_run() -> None:
    stuck = Stuck()
    async with serving(create_app(stuck_team(stuck))) as url, httpx.AsyncClient(base_url=url) as c:
        async with anyio.create_task_group() as tg:
            tg.start_soon(functools.partial(c.post, "/runs?wait=true", json={"goal": SCAN}))
            await stuck.started.wait()
            tg.cancel_scope.cancel()  # the client hangs up mid-run
        await stuck.cancelled.wait()  # so the server cancelled the worker's tool
        (run,) = (await c.get("/runs")).json()["runs"]
        got = await run_events(c, run["run_id"])
        assert got[-1].event == "RunFailed"
        assert (await c.get(f"/runs/{run['run_id']}")).json()["status"] == "cancelled"
        # The team still serves.
        fine = await c.post("/runs?wait=true", json={"goal": GOAL})
        assert fine.json()["status"] == "completed"


async def test_the_apps_shutdown_ends_a_live_run_cancelled_with_its_last_event() -> None:
    stuck, store = Stuck(), MemoryRunStore()
    async with serving(create_app(stuck_team(stuck), store=store)) as url:
        async with httpx.AsyncClient(base_url=url) as c:
            run_id = (await c.post("/runs", json={"goal": SCAN})).json()["run_id"]
        await stuck.started.wait()
    # The server has stopped (its lifespan too) with the run mid-step.
    assert stuck.cancelled.is_set()
    record = store.get(run_id)
    assert record is not None
    assert record.ended.is_set()
    assert record.status == "cancelled"
    last = record.events[-1]
    assert isinstance(last, RunFailed)
    assert last.error_type == "RunCancelled"


async def test_fifty_concurrent_posts_with_fifty_listeners() -> None:
    limits = httpx.Limits(max_connections=200, max_keepalive_connections=200)
    app = create_app(support_team())
    # Not httpx's 5 s default: the fifty runs share this process with their client, and
    # on a loaded machine a POST waited longer than that for its answer (ReadTimeout).
    async with (
        serving(app) as url,
        httpx.AsyncClient(base_url=url, limits=limits, timeout=30) as c,
    ):
        answers: dict[int, tuple[str, list[Frame]]] = {}

        async def one(n: int) -> None:
            order = 10000 + n
            goal = f"What is the status of order {order}?"
            run_id = (await c.post("/runs", json={"goal": goal})).json()["run_id"]
            answers[n] = (run_id, await run_events(c, run_id))

        async with anyio.create_task_group() as tg:
            for n in range(50):
                tg.start_soon(one, n)
        assert len({run_id for run_id, _ in answers.values()}) == 50
        for n, (run_id, got) in answers.items():
            assert [f.id for f in got] == list(range(1, len(got) + 1))
            assert got[-1].event == "RunCompleted"
            assert got[-1].data is not None
            result = got[-1].data["result"]
            assert isinstance(result, dict)
            assert result["answer"] == f"order {10000 + n}: unknown order"
            assert result["run_id"] == run_id
        completed = (await c.get("/runs", params={"status": "completed"})).json()["runs"]
        assert len(completed) == 50
