"""Clients that hang up, fifty times over (under real uvicorn): a ``?wait=true`` POST whose
client leaves cancels its run, as the README says, and neither it nor an events follower
that leaves (with ``?live=true`` or not) leaves a task, a waiter or a live tap behind."""

from __future__ import annotations

import asyncio
import functools
from pathlib import Path

import anyio
import httpx2 as httpx
import pytest
from hypercorn.config import Config
from hypercorn.trio import serve

from examples.service.serving import serving
from regiment.serve import MemoryRunStore, create_app
from tests.hierarchy.approval_team import Shop, plan_json, shop_team, step
from tests.serve.sse import Frame, run_events
from tests.serve.teams import Stuck, stuck_team

pytestmark = pytest.mark.anyio

SCAN = "Please scan the warehouse for order 55001."
TIMES = 50


async def _settled(before: set[asyncio.Task[object]]) -> set[asyncio.Task[object]]:
    """The tasks there are beyond ``before`` once the server has wound the requests down
    (each connection's task ends a few loop turns after its client left)."""
    with anyio.move_on_after(10):  # a guard against a hang, not a timing: it asserts below
        while extra := asyncio.all_tasks() - before - {asyncio.current_task()}:
            await asyncio.wait(extra)  # (a task they start on the way is waited for next)
    return asyncio.all_tasks() - before - {asyncio.current_task()}


async def _hang_up_waiting(c: httpx.AsyncClient, stuck: Stuck) -> None:
    """POST a run with ``?wait=true`` and hang up once it is in its tool."""
    stuck.started = anyio.Event()
    async with anyio.create_task_group() as tg:
        tg.start_soon(functools.partial(c.post, "/runs?wait=true", json={"goal": SCAN}))
        await stuck.started.wait()
        tg.cancel_scope.cancel()


async def test_fifty_waiting_clients_that_hang_up_cancel_their_runs_and_leave_nothing() -> None:
    stuck, store = Stuck(), MemoryRunStore()
    async with (
        serving(create_app(stuck_team(stuck), store=store)) as url,
        httpx.AsyncClient(base_url=url) as c,
    ):
        await _hang_up_waiting(c, stuck)  # the first run starts the team's own tasks
        (first,) = store.list()
        await first.ended.wait()
        before = asyncio.all_tasks()
        for _ in range(TIMES):
            await _hang_up_waiting(c, stuck)
        runs = store.list()
        for record in runs:
            with anyio.fail_after(10):
                await record.ended.wait()
        assert len(runs) == TIMES + 1
        assert {r.status for r in runs} == {"cancelled"}  # each ended when its client left
        assert await _settled(before) == set()  # no run's drive, request or waiter is left
        assert all(not r.taps for r in runs)
        listed = (await c.get("/runs", params={"status": "running"})).json()["runs"]
        assert listed == []


async def _follow_and_hang_up(c: httpx.AsyncClient, run_id: str, *, live: bool) -> None:
    """Follow the run's events (its progress too, if ``live``); hang up at the first."""
    params = {"live": "true"} if live else {}
    async with c.stream("GET", f"/runs/{run_id}/events", params=params) as response:
        async for line in response.aiter_lines():
            if line.startswith("id: "):
                break


async def test_fifty_followers_that_hang_up_leave_the_run_going_and_nothing_behind() -> None:
    stuck, store = Stuck(), MemoryRunStore()
    async with (
        serving(create_app(stuck_team(stuck), store=store)) as url,
        httpx.AsyncClient(base_url=url) as c,
    ):
        run_id = (await c.post("/runs", json={"goal": SCAN})).json()["run_id"]
        await stuck.started.wait()
        record = store.get(run_id)
        assert record is not None
        # the first stream starts sse-starlette's one watcher of the server's stop
        await _follow_and_hang_up(c, run_id, live=False)
        before = asyncio.all_tasks()
        for n in range(TIMES):
            await _follow_and_hang_up(c, run_id, live=n % 2 == 1)
        assert await _settled(before) == set()
        assert record.taps == set()
        assert not record.ended.is_set()  # a follower that leaves does not end the run
        assert (await c.get(f"/runs/{run_id}")).json()["status"] == "running"
        await c.post(f"/runs/{run_id}/cancel")
        with anyio.fail_after(10):
            await record.ended.wait()
        assert record.status == "cancelled"


async def _dispatched_after(c: httpx.AsyncClient, run_id: str, last: int) -> bool:
    """Whether the run's events after ``last`` have a ``StepDispatched`` (read up to it)."""
    headers = {"Last-Event-ID": str(last)}
    async with c.stream("GET", f"/runs/{run_id}/events", headers=headers) as events:
        async for line in events.aiter_lines():
            if line == "event: StepDispatched":
                return True
    return False


async def test_a_client_that_hangs_up_on_a_resumes_wait_cancels_the_run_for_good(
    tmp_path: Path,
) -> None:
    # As on POST /runs: the request asked to wait for the run, and left. A cancelled run
    # is not resumed (README): a resume that must outlive its connection leaves ?wait out.
    shop = Shop()
    plan = plan_json(
        step("s1", "billing", "refund 2 500"),
        {**step("s2", "slow", "slow 1"), "depends_on": ["s1"]},
    )
    app = create_app(shop_team(shop, plan), journal=str(tmp_path / "runs.db"))
    async with serving(app) as url, httpx.AsyncClient(base_url=url) as c:
        paused = (await c.post("/runs?wait=true", json={"goal": "refund, then slow"})).json()
        run_id = paused["run_id"]
        (asked,) = paused["pending_approvals"]
        await c.post(f"/approvals/{asked['request_id']}", json={"decision": "approve"})
        async with anyio.create_task_group() as tg:
            tg.start_soon(c.post, f"/runs/{run_id}/resume?wait=true")
            while not await _dispatched_after(c, run_id, 5):  # (the paused run's, at first)
                pass
            tg.cancel_scope.cancel()  # the resume's client hangs up
        last = (await run_events(c, run_id))[-1]
        assert last.data is not None
        assert (last.event, last.data["error_type"]) == ("RunFailed", "RunCancelled")
        again = await c.post(f"/runs/{run_id}/resume")
        assert again.status_code == 409
        assert "cancelled" in again.json()["detail"]
    assert shop.refunds == [("2", 500)]
    assert shop.slow_done == []


@pytest.mark.parametrize("anyio_backend", ["trio"])
async def test_a_waiting_client_that_hangs_up_cancels_its_run_on_trio_too() -> None:
    # The wait reads the request's http.disconnect, which hypercorn sends on trio as
    # uvicorn does on asyncio.
    stuck, store = Stuck(), MemoryRunStore()
    config = Config()
    config.bind = ["127.0.0.1:0"]
    shutdown = anyio.Event()
    app = create_app(stuck_team(stuck), store=store)
    async with anyio.create_task_group() as tg:
        (url,) = await tg.start(
            functools.partial(serve, app, config, shutdown_trigger=shutdown.wait)  # type: ignore[arg-type]
        )
        async with httpx.AsyncClient(base_url=url) as c:
            await _hang_up_waiting(c, stuck)
        (record,) = store.list()
        with anyio.fail_after(10):
            await record.ended.wait()
        shutdown.set()
    assert record.status == "cancelled"
    assert stuck.cancelled.is_set()  # its tool was cancelled with it


async def test_a_follower_that_hangs_up_leaves_a_waited_run_to_its_waiter_and_followers() -> None:
    # What a follower leaving means does not depend on how the run was posted: only the
    # ?wait=true request's own client leaving cancels it (README), never a follower's.
    shop, store = Shop(), MemoryRunStore()
    app = create_app(shop_team(shop, plan_json(step("s1", "slow", "slow 1"))), store=store)
    async with serving(app) as url, httpx.AsyncClient(base_url=url) as c:
        waited: list[httpx.Response] = []
        stayed: list[Frame] = []
        async with anyio.create_task_group() as tg:

            async def wait() -> None:
                waited.append(await c.post("/runs?wait=true", json={"goal": "slow"}))

            tg.start_soon(wait)
            while not (await c.get("/runs")).json()["runs"]:
                pass  # until the run has started
            (record,) = store.list()

            async def stay() -> None:
                stayed.extend(await run_events(c, record.run_id))

            tg.start_soon(stay)
            await _follow_and_hang_up(c, record.run_id, live=False)
            await _follow_and_hang_up(c, record.run_id, live=True)
            before = asyncio.all_tasks()
            await _follow_and_hang_up(c, record.run_id, live=False)
            assert await _settled(before) == set()  # the server is done with the leavers
            assert not record.ended.is_set()
            assert (await c.get(f"/runs/{record.run_id}")).json()["status"] == "running"
            shop.release.set()
        (answer,) = waited
        assert answer.json()["status"] == "completed"
        assert stayed[-1].event == "RunCompleted"
        assert [f.id for f in stayed] == list(range(1, len(stayed) + 1))
    assert shop.slow_done == ["slow 1"]
