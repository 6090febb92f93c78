"""A keyed ``POST /runs?wait=true`` retry sent to a service whose run another service
(sharing its journal) runs waits for that run's end, read from the journal, instead of
answering it as it is; its client hanging up ends that wait, not the run. On a real
SQLite file and a real PostgreSQL server, under real uvicorn."""

from __future__ import annotations

import anyio
import httpx2 as httpx
import pytest

from examples.service.serving import serving
from regiment.serve import create_app
from tests.hierarchy.approval_team import Shop, plan_json, shop_team, step
from tests.serve.hearing import hearing
from tests.serve.sse import frames

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(120)]

SLOW = plan_json(step("s1", "slow", "slow 1"))
GOAL = {"goal": "slow order 1"}
KEY = {"Idempotency-Key": "slow-1"}


async def test_a_retry_waits_for_the_run_another_service_runs(journal: str) -> None:
    shop = Shop()
    async with (
        serving(create_app(shop_team(shop, SLOW), journal=journal)) as one,
        serving(create_app(shop_team(shop, SLOW), journal=journal)) as two,
        httpx.AsyncClient(timeout=60) as c,
    ):
        posted = await c.post(f"{one}/runs", json=GOAL, headers=KEY)
        assert posted.status_code == 202, posted.text
        run_id = posted.json()["run_id"]
        # A retry whose client hangs up: the wait ends, the run goes on.
        waiting, left = anyio.Event(), anyio.Event()
        with (
            hearing("waits for a run another process runs", waiting),
            hearing("a waiting request's client left; the run goes on", left),
        ):
            async with anyio.create_task_group() as tg:

                async def hanging() -> None:
                    said = await c.post(f"{two}/runs?wait=true", json=GOAL, headers=KEY)
                    pytest.fail(f"answered at once: {said.text}")

                tg.start_soon(hanging)
                await waiting.wait()
                tg.cancel_scope.cancel()  # the client hangs up
            await left.wait()  # the service stopped waiting for it
        view = (await c.get(f"{two}/runs/{run_id}")).json()
        assert view["status"] == "running", view  # not cancelled
        # A retry that stays: answered once the run has ended in the other service.
        moved = anyio.Event()  # the retry waits (it said so), or it answered (as it was)
        answers: list[httpx.Response] = []

        async def retry() -> None:
            answers.append(await c.post(f"{two}/runs?wait=true", json=GOAL, headers=KEY))
            moved.set()

        with hearing("waits for a run another process runs", moved):
            async with anyio.create_task_group() as tg:
                tg.start_soon(retry)
                await moved.wait()
                assert not answers, answers[0].text  # it waits, not answers it running
                shop.release.set()
        (answer,) = answers
        assert answer.status_code == 200, answer.text
        assert answer.headers["idempotent-replayed"] == "true"
        assert (answer.json()["run_id"], answer.json()["status"]) == (run_id, "completed")
        assert answer.json()["answer"], answer.json()
    assert shop.slow_done == ["slow 1"]  # once: the retries started nothing


async def test_a_retry_waits_for_the_pause_not_for_the_approval_request(journal: str) -> None:
    # The journal lists a run paused as soon as a step asks for an approval, while its
    # other steps still work: the retry answered then, "paused" with its slow step still
    # in flight, where the run's own service answers once the run has got to its pause.
    shop = Shop()
    plan = plan_json(step("s1", "slow", "slow 1"), step("s2", "billing", "refund 88213 40"))
    async with (
        serving(create_app(shop_team(shop, plan), journal=journal)) as one,
        serving(create_app(shop_team(shop, plan), journal=journal)) as two,
        httpx.AsyncClient(timeout=60) as c,
    ):
        run_id = (await c.post(f"{one}/runs", json=GOAL, headers=KEY)).json()["run_id"]
        async with c.stream("GET", f"{one}/runs/{run_id}/events") as response:
            async for frame in frames(response):  # (sent once the journal has it)
                if frame.event == "ApprovalRequested":
                    break
        assert (await c.get(f"{two}/runs/{run_id}")).json()["status"] == "paused"
        moved = anyio.Event()  # the retry waits (it said so), or it answered (as it was)
        answers: list[httpx.Response] = []

        async def retry() -> None:
            answers.append(await c.post(f"{two}/runs?wait=true", json=GOAL, headers=KEY))
            moved.set()

        with hearing("waits for a run another process runs", moved):
            async with anyio.create_task_group() as tg:
                tg.start_soon(retry)
                await moved.wait()
                assert not answers, answers[0].text  # it waits, not answers it half-paused
                shop.release.set()
        (answer,) = answers
    assert answer.status_code == 200, answer.text
    view = answer.json()
    assert (view["run_id"], view["status"]) == (run_id, "paused")
    assert view["committed"] == ["s1"], view  # the slow step's end came first
    assert [(s["step_id"], s["status"]) for s in view["steps"]] == [("s1", "done")], view
