"""Many followers of one run another service runs, and a ``?wait=true`` retry waiting for
it, on one service: one read of the journal serves them all (started by the first,
logged once), a follower that hangs up leaves the others be, and each of the others gets
every event in order, to the run's ``RunCompleted``, as the run's own service streams it.

Each used to read the journal on its own, two queries each every half second. Real
uvicorn + httpx on a real SQLite file and a real PostgreSQL server.
"""

from __future__ import annotations

import logging

import anyio
import httpx2 as httpx
import pytest

from examples.service.serving import serving
from regiment.serve import create_app
from tests.hierarchy.approval_team import Shop, plan_json, shop_team, step
from tests.serve.hearing import hearing
from tests.serve.sse import Frame, frames, run_events
from tests.serve.test_follow_elsewhere import LEFT, _rest, _until

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(120)]

SLOW = plan_json(step("s1", "slow", "slow 1"))
GOAL = {"goal": "slow order 1"}
KEY = {"Idempotency-Key": "many-1"}
FOLLOWERS = 6
READS = "the journal is read for a run another process runs, for its followers and waits here"


class _Counted(logging.Handler):
    """Counts ``regiment.serve``'s records whose message is ``words``."""

    def __init__(self, words: str) -> None:
        super().__init__(logging.DEBUG)
        self.words, self.count = words, 0

    def emit(self, record: logging.LogRecord) -> None:
        self.count += record.getMessage() == self.words


async def _followed(
    c: httpx.AsyncClient, two: str, run_id: str, shop: Shop
) -> tuple[list[list[Frame]], list[httpx.Response]]:
    """``FOLLOWERS`` followers of the run on service ``two``, one more that hangs up as they
    follow, and a keyed retry that waits; then the run goes on to its end: what each
    follower that stayed got, and the retry's answer."""
    path, followed, answers = f"{two}/runs/{run_id}/events", list[list[Frame]](), []
    dispatched = [anyio.Event() for _ in range(FOLLOWERS + 1)]
    leaving, waits, left = anyio.CancelScope(), anyio.Event(), anyio.Event()

    async def follow(n: int) -> None:
        async with c.stream("GET", path) as response:
            events = frames(response)
            got = await _until(events, "StepDispatched")
            dispatched[n].set()
            followed.append(got + await _rest(events))

    async def hangs_up() -> None:  # follows too, then its client leaves
        with leaving:
            async with c.stream("GET", path) as response:
                await _until(frames(response), "StepDispatched")
                dispatched[FOLLOWERS].set()
                await anyio.sleep_forever()

    async def retry() -> None:
        answers.append(await c.post(f"{two}/runs?wait=true", json=GOAL, headers=KEY))

    with anyio.fail_after(60):  # (a hang guard: the answers are asserted)
        async with anyio.create_task_group() as tg:
            with hearing("waits for a run another process runs", waits), hearing(LEFT, left):
                tg.start_soon(hangs_up)
                for n in range(FOLLOWERS):
                    tg.start_soon(follow, n)
                tg.start_soon(retry)
                for each in dispatched:
                    await each.wait()
                await waits.wait()
                leaving.cancel()  # its client hangs up ...
                await left.wait()  # ... and the service has seen it leave
            shop.release.set()  # the run goes on to its end: the others follow it
    return followed, answers


async def test_many_followers_share_one_read_and_each_gets_the_run_in_order(journal: str) -> None:
    shop, counted = Shop(), _Counted(READS)
    logger = logging.getLogger("regiment.serve")
    logger.addHandler(counted)
    try:
        async with (
            serving(create_app(shop_team(shop, SLOW), journal=journal)) as one,
            serving(create_app(shop_team(shop, SLOW), journal=journal)) as two,
            httpx.AsyncClient(timeout=60) as c,
        ):
            run_id = (await c.post(f"{one}/runs", json=GOAL, headers=KEY)).json()["run_id"]
            followed, answers = await _followed(c, two, run_id, shop)
            async with httpx.AsyncClient(base_url=one, timeout=60) as d:
                replayed = await run_events(d, run_id)
    finally:
        logger.removeHandler(counted)
    assert counted.count == 1  # one read for the six followers, the one that left, the wait
    assert len(followed) == FOLLOWERS
    assert [f.event for f in replayed][-1] == "RunCompleted"
    for got in followed:
        assert got == replayed  # every event, each once, in order, as the run's own stream
    (answer,) = answers
    assert (answer.status_code, answer.json()["status"]) == (200, "completed")
