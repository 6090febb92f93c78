"""Approve, resume and cancel over HTTP on both journal kinds (a real SQLite file and a
real PostgreSQL server), across a restart of the service, under real uvicorn."""

from __future__ import annotations

import httpx2 as httpx
import msgspec
import pytest

from examples.service.serving import serving
from regiment.journal import Record, RunCreated, StepReported, open_journal
from regiment.serve import create_app
from tests.hierarchy.approval_team import Shop, plan_json, shop_team, step

from .sse import Frame, frames, run_events

pytestmark = pytest.mark.anyio


async def test_a_paused_run_is_decided_and_resumed_after_a_restart(journal: str) -> None:
    shop = Shop()
    plan = plan_json(step("s1", "billing", "refund 2 500"))
    async with (
        serving(create_app(shop_team(shop, plan), journal=journal)) as url,
        httpx.AsyncClient(base_url=url) as c,
    ):
        done = (await c.post("/runs?wait=true", json={"goal": "a refund"})).json()
        run_id = done["run_id"]
        assert done["status"] == "paused"
        before = await run_events(c, run_id)
        # At its pause: nothing more yet (a 200, an empty stream), but a resume goes on
        # after it, so not the 204 of a run that has ended for good.
        assert await run_events(c, run_id, last=before[-1].id) == []
    # the service restarts: the run is the journal's
    async with (
        serving(create_app(shop_team(shop, plan), journal=journal)) as url,
        httpx.AsyncClient(base_url=url) as c,
    ):
        view = (await c.get(f"/runs/{run_id}")).json()
        assert view["status"] == "paused"
        (asked,) = view["pending_approvals"]
        assert await run_events(c, run_id) == before  # the same events, the same numbers
        (listed,) = (await c.get("/approvals", params={"run_id": run_id})).json()["approvals"]
        assert listed["request_id"] == asked["request_id"]
        decided = await c.post(f"/approvals/{asked['request_id']}", json={"decision": "approve"})
        assert decided.status_code == 200, decided.text
        assert (await c.get(f"/runs/{run_id}")).json()["status"] == "stalled"
        resumed = await c.post(f"/runs/{run_id}/resume?wait=true")
        assert resumed.status_code == 200, resumed.text
        assert resumed.json()["status"] == "completed"
        after = await run_events(c, run_id, last=before[-1].id)
        assert after
        assert [f.id for f in after] == list(range(len(before) + 1, len(before) + len(after) + 1))
        assert after[-1].event == "RunCompleted"
        again = await c.post(f"/approvals/{asked['request_id']}", json={"decision": "approve"})
        assert again.status_code == 409
    assert shop.refunds == [("2", 500)]  # once


async def test_a_run_cancelled_over_http_stays_cancelled_after_a_restart(journal: str) -> None:
    shop = Shop()
    plan = plan_json(step("s1", "slow", "slow work"))
    async with (
        serving(create_app(shop_team(shop, plan), journal=journal)) as url,
        httpx.AsyncClient(base_url=url) as c,
    ):
        run_id = (await c.post("/runs", json={"goal": "slow work"})).json()["run_id"]
        async with c.stream("GET", f"/runs/{run_id}/events") as events:
            async for line in events.aiter_lines():
                if line == "event: StepDispatched":
                    break
        cancelled = await c.post(f"/runs/{run_id}/cancel")
        assert (cancelled.status_code, cancelled.json()["cancelling"]) == (202, True)
        last = (await run_events(c, run_id))[-1]
        assert last.data is not None
        assert last.data["error_type"] == "RunCancelled"
    async with (
        serving(create_app(shop_team(shop, plan), journal=journal)) as url,
        httpx.AsyncClient(base_url=url) as c,
    ):
        view = (await c.get(f"/runs/{run_id}")).json()
        assert view["status"] == "cancelled"
        assert (await run_events(c, run_id))[-1] == last
        listed = (await c.get("/runs", params={"status": "cancelled"})).json()["runs"]
        assert [r["run_id"] for r in listed] == [run_id]
        late = await c.post(f"/runs/{run_id}/cancel")
        assert (late.status_code, late.json()["cancelling"]) == (202, False)
        refused = await c.post(f"/runs/{run_id}/resume")
        assert refused.status_code == 409
    assert shop.slow_done == []


CREDIT_THEN_SLOW = plan_json(
    step("s1", "billing", "credit 2 50"), {**step("s2", "slow", "slow 1"), "depends_on": ["s1"]}
)


async def _stalled_copy(spec: str, run_id: str) -> str:
    """What a service killed mid-run leaves: the head of ``run_id``'s records, up to its
    first step's report, under a new run id that nobody holds. The new id."""
    journal = await open_journal(spec)
    try:
        records = [e.record for e in await journal.read(run_id)]
        cut = 1 + next(i for i, r in enumerate(records) if isinstance(r, StepReported))
        stalled = f"{run_id}-x"
        moved = [
            msgspec.json.decode(
                msgspec.json.encode(r).replace(run_id.encode(), stalled.encode()), type=Record
            )
            for r in records[:cut]
        ]
        assert isinstance(moved[0], RunCreated)
        lease = await journal.create_run(moved[0], owner="dead:1", ttl=60)
        await journal.append_all(lease, moved[1:])
        await journal.release(lease)
    finally:
        await journal.close()
    return stalled


async def test_a_resumed_runs_live_stream_replays_its_journal_once_then_goes_on(
    journal: str,
) -> None:
    # A run stalled after its first step (its service died), resumed by a restarted
    # service: GET .../events?live=true gives the journaled events once, in order, under
    # their numbers, then the resumed run's, numbered and live, as they come.
    done = Shop()
    done.release.set()
    async with (
        serving(create_app(shop_team(done, CREDIT_THEN_SLOW), journal=journal)) as url,
        httpx.AsyncClient(base_url=url) as c,
    ):
        ran = (await c.post("/runs?wait=true", json={"goal": "credit, then slow"})).json()
        assert ran["status"] == "completed"
    run_id = await _stalled_copy(journal, ran["run_id"])
    shop = Shop()  # its slow step waits until the follower has seen it dispatched
    async with (
        serving(create_app(shop_team(shop, CREDIT_THEN_SLOW), journal=journal)) as url,
        httpx.AsyncClient(base_url=url) as c,
    ):
        *journaled, end = await run_events(c, run_id)
        assert [f.event for f in journaled] == [
            "RunStarted", "PlanCreated", "StepDispatched", "StepCompleted"
        ]  # fmt: skip
        # Nobody runs it: the stream says so, last (it just stopped: a cut, as a client saw it)
        assert (end.id, end.event) == (None, "StreamEnd")
        assert end.data == {
            "run_id": run_id,
            "status": "stalled",
            "last_event_id": 4,
            "detail": f"no process runs run {run_id} (it stopped before its end): POST "
            f"/runs/{run_id}/resume finishes it, then GET /runs/{run_id}/events with "
            "Last-Event-ID: 4 for the rest",
        }
        assert (await c.post(f"/runs/{run_id}/resume")).status_code == 202
        got: list[Frame] = []
        async with c.stream("GET", f"/runs/{run_id}/events?live=true") as response:
            async for frame in frames(response):
                if frame.comment is None:
                    got.append(frame)
                if frame.event == "StepDispatched" and frame.id == len(journaled) + 1:
                    shop.release.set()
        numbered = [f for f in got if f.id is not None]
        assert [f.id for f in numbered] == list(range(1, len(numbered) + 1))  # no gap, no twice
        assert numbered[: len(journaled)] == journaled  # the journal's, once, as they were
        assert [f.event for f in numbered[len(journaled) :]] == [
            "StepDispatched", "StepCompleted", "SynthesisStarted", "RunCompleted"
        ]  # fmt: skip
        progress = [i for i, f in enumerate(got) if f.id is None]
        assert progress  # the resumed run's live progress came too ...
        assert min(progress) > got.index(journaled[-1])  # ... after the replay, not in it
        assert shop.refunds == []  # s1's tool ran before the stall, not again
        assert await run_events(c, run_id) == numbered  # a replay after it is the same
