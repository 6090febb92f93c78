"""``GET /runs/{id}/events`` on a service whose run another service sharing its journal
runs (a replica behind a load balancer): the stream follows the run as that service
journals it, to its end, instead of ending at once with a ``StreamEnd`` "running"; a run
whose owner is killed ends it with ``StreamEnd`` "stalled"; a follower that hangs up
stops the reading. Real uvicorn + httpx on a real SQLite file and a real PostgreSQL
server (and a real ``regiment serve`` process, killed)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import httpx2 as httpx
import pytest

from examples.service.serving import serving
from regiment.serve import create_app
from tests.cli.helpers import write_team
from tests.hierarchy.approval_team import Shop, plan_json, shop_team, step
from tests.serve import cli_serving
from tests.serve.hearing import hearing
from tests.serve.sse import Frame, frames, run_events
from tests.serve.teams import support_team

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(120)]

SLOW = plan_json(step("s1", "slow", "slow 1"))
HELD = ["RunStarted", "PlanCreated", "StepDispatched"]  # before the slow step's end
FOLLOWS = "a follower follows a run another process runs"
LEFT = "a follower of a run another process runs left; the run goes on"


async def _until(events: AsyncIterator[Frame], name: str) -> list[Frame]:
    """The event frames of ``events`` up to the first ``name`` (keep-alives left out)."""
    got: list[Frame] = []
    async for frame in events:
        if frame.comment is None:
            got.append(frame)
            if frame.event == name:
                return got
    pytest.fail(f"the stream ended before a {name}: {[f.event for f in got]}")


async def _rest(events: AsyncIterator[Frame]) -> list[Frame]:
    return [f async for f in events if f.comment is None]


async def test_a_follower_on_another_service_gets_the_run_as_it_goes_to_its_end(
    journal: str,
) -> None:
    shop = Shop()
    async with (
        serving(create_app(shop_team(shop, SLOW), journal=journal)) as one,
        serving(create_app(shop_team(shop, SLOW), journal=journal)) as two,
        httpx.AsyncClient(timeout=60) as c,
    ):
        run_id = (await c.post(f"{one}/runs", json={"goal": "slow order 1"})).json()["run_id"]
        path, again = f"{two}/runs/{run_id}/events", {"Last-Event-ID": "1"}
        async with c.stream("GET", path) as first:
            one_events = frames(first)
            before = await _until(one_events, "StepDispatched")
            # A reconnect (after event 1) while the run goes on.
            async with c.stream("GET", path, headers=again) as resumed:
                two_events = frames(resumed)
                resumed_before = await _until(two_events, "StepDispatched")
                assert (await c.get(f"{two}/runs/{run_id}")).json()["status"] == "running"
                shop.release.set()  # the slow step ends in the first service
                after, resumed_after = await _rest(one_events), await _rest(two_events)
        async with httpx.AsyncClient(base_url=one, timeout=60) as d:
            replayed = await run_events(d, run_id)
    followed = before + after
    assert [f.event for f in before] == HELD
    assert [f.event for f in after] == ["StepCompleted", "SynthesisStarted", "RunCompleted"]
    assert [f.id for f in followed] == list(range(1, len(followed) + 1))  # in order, each once
    assert followed == replayed  # the same frames as the run's own service streams
    assert resumed_before + resumed_after == followed[1:]
    assert followed[-1].data is not None
    assert followed[-1].data["result"]


async def test_a_run_that_asks_for_an_approval_is_followed_to_its_pause(journal: str) -> None:
    # The journal lists the run paused as soon as its refund asks for an approval, while
    # its slow step still works: the stream ended there, with a StreamEnd "paused".
    shop = Shop()
    plan = plan_json(step("s1", "slow", "slow 1"), step("s2", "billing", "refund 88213 40"))
    async with (
        serving(create_app(shop_team(shop, plan), journal=journal)) as one,
        serving(create_app(shop_team(shop, plan), journal=journal)) as two,
        httpx.AsyncClient(timeout=60) as c,
    ):
        run_id = (await c.post(f"{one}/runs", json={"goal": "slow order 1"})).json()["run_id"]
        async with c.stream("GET", f"{two}/runs/{run_id}/events") as response:
            events = frames(response)
            before = await _until(events, "ApprovalRequested")
            assert (await c.get(f"{two}/runs/{run_id}")).json()["status"] == "paused"
            shop.release.set()  # the slow step ends; then the run pauses
            after = await _rest(events)
        async with httpx.AsyncClient(base_url=one, timeout=60) as d:
            replayed = await run_events(d, run_id)
    assert [f.event for f in after] == ["StepCompleted", "RunCompleted"]
    assert before + after == replayed
    assert after[-1].data is not None
    result = after[-1].data["result"]
    assert isinstance(result, dict)
    assert result["status"] == "paused", result


async def test_a_follower_of_a_run_whose_service_is_killed_is_told_it_stalled(
    journal: str, tmp_path: Path
) -> None:
    team = write_team(tmp_path, "stuck")
    with cli_serving.serving(team, "--journal", journal) as owner:
        async with (
            serving(create_app(support_team(), journal=journal)) as other,
            httpx.AsyncClient(timeout=60) as c,
        ):
            posted = await c.post(f"{owner.url}/runs", json={"goal": "wait"})
            run_id = posted.json()["run_id"]
            async with c.stream("GET", f"{other}/runs/{run_id}/events") as response:
                events = frames(response)
                before = await _until(events, "StepDispatched")
                owner.child.kill()  # SIGKILL: its lease is never given up
                after = await _rest(events)
    assert [f.event for f in before] == HELD
    (end,) = after
    assert (end.event, end.id) == ("StreamEnd", None)
    assert end.data is not None
    assert (end.data["status"], end.data["last_event_id"]) == ("stalled", 3), end.data
    detail = str(end.data["detail"])
    assert f"POST /runs/{run_id}/resume finishes it" in detail, detail
    assert "Last-Event-ID: 3" in detail, detail


async def test_a_follower_that_hangs_up_stops_the_reading_not_the_run(journal: str) -> None:
    shop = Shop()
    async with (
        serving(create_app(shop_team(shop, SLOW), journal=journal)) as one,
        serving(create_app(shop_team(shop, SLOW), journal=journal)) as two,
        httpx.AsyncClient(timeout=60) as c,
    ):
        run_id = (await c.post(f"{one}/runs", json={"goal": "slow order 1"})).json()["run_id"]
        follows, left = anyio.Event(), anyio.Event()
        with hearing(FOLLOWS, follows), hearing(LEFT, left):
            async with anyio.create_task_group() as tg:

                async def following() -> None:
                    async with c.stream("GET", f"{two}/runs/{run_id}/events") as response:
                        ended = [f.event async for f in frames(response) if f.comment is None]
                    pytest.fail(f"the stream ended while the run goes on: {ended}")

                tg.start_soon(following)
                await follows.wait()
                tg.cancel_scope.cancel()  # the client hangs up
            await left.wait()  # the service stopped reading the journal for it
        assert (await c.get(f"{two}/runs/{run_id}")).json()["status"] == "running"
        shop.release.set()  # the run went on meanwhile, and ends
        async with httpx.AsyncClient(base_url=one, timeout=60) as d:
            end = (await run_events(d, run_id))[-1]
    assert end.event == "RunCompleted"
    assert end.data is not None
    result = end.data["result"]
    assert isinstance(result, dict)
    assert result["status"] == "completed", result
