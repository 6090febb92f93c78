"""``POST /runs`` with an ``Idempotency-Key``: a retry (after the answer, or two at once)
answers the run the first post started and starts nothing; another body under the key
is refused; a bad key is a 400; the key finds its run after a restart (on a real SQLite
file and a real PostgreSQL server) and, without a journal, for the service's life."""

from __future__ import annotations

import functools

import anyio
import httpx2 as httpx
import pytest
from hypercorn.config import Config
from hypercorn.trio import serve
from starlette.applications import Starlette
from starlette.routing import Mount

from examples.service.serving import serving
from regiment.serve import create_app
from tests.hierarchy.approval_team import Shop, plan_json, shop_team, step

pytestmark = pytest.mark.anyio

PLAN = plan_json(step("s1", "billing", "credit 7 50"))
GOAL = {"goal": "credit order 7"}


def _replayed(answer: httpx.Response) -> bool:
    return answer.headers.get("idempotent-replayed") == "true"


async def test_a_retry_answers_the_same_run_also_after_a_restart(journal: str) -> None:
    shop = Shop()
    key = {"Idempotency-Key": "order-7-credit-1"}
    async with (
        serving(create_app(shop_team(shop, PLAN), journal=journal)) as url,
        httpx.AsyncClient(base_url=url) as c,
    ):
        first = await c.post("/runs?wait=true", json=GOAL, headers=key)
        assert first.status_code == 200, first.text
        assert first.json()["status"] == "completed"
        assert not _replayed(first)
        run_id = first.json()["run_id"]
        again = await c.post("/runs?wait=true", json=GOAL, headers=key)
        assert again.status_code == 200, again.text
        assert _replayed(again)
        assert again.json()["run_id"] == run_id
        assert again.json()["status"] == "completed"
        posted = await c.post("/runs", json=GOAL, headers=key)  # without ?wait: 200, not 202
        assert posted.status_code == 200, posted.text
        assert posted.json() == {"run_id": run_id, "replayed": True}
        assert posted.headers["location"] == f"/runs/{run_id}"
        listed = (await c.get("/runs")).json()["runs"]
        assert [r["run_id"] for r in listed] == [run_id]
    async with (
        serving(create_app(shop_team(shop, PLAN), journal=journal)) as url,
        httpx.AsyncClient(base_url=url) as c,
    ):
        after = await c.post("/runs?wait=true", json=GOAL, headers=key)
        assert after.status_code == 200, after.text
        assert _replayed(after)
        assert (after.json()["run_id"], after.json()["status"]) == (run_id, "completed")
        other = await c.post("/runs", json={"goal": "credit order 8"}, headers=key)
        assert other.status_code == 422, other.text  # the journal has the key's goal
        assert "was used for another request" in other.json()["detail"]
        assert run_id in other.json()["detail"]
        assert len((await c.get("/runs")).json()["runs"]) == 1
    assert shop.refunds == [("credit:7", 50)]  # once


async def test_posts_at_once_with_one_key_start_one_run(journal: str) -> None:
    shop = Shop()
    async with (
        serving(create_app(shop_team(shop, PLAN), journal=journal)) as url,
        httpx.AsyncClient(base_url=url) as c,
    ):
        answers: list[httpx.Response] = []

        async def post(wait: bool) -> None:
            headers = {"Idempotency-Key": "burst"}
            answers.append(await c.post("/runs", params={"wait": wait}, json=GOAL, headers=headers))

        async with anyio.create_task_group() as tg:
            for i in range(6):
                tg.start_soon(post, i % 2 == 0)
        (first,) = [a for a in answers if not _replayed(a)]  # one run started
        assert first.status_code in (200, 202), first.text  # (a ?wait=true post's, or not)
        assert [a.status_code for a in answers if _replayed(a)] == [200] * 5
        assert len({a.json()["run_id"] for a in answers}) == 1
        final = await c.post("/runs?wait=true", json=GOAL, headers={"Idempotency-Key": "burst"})
        assert final.json()["status"] == "completed"
        assert len((await c.get("/runs")).json()["runs"]) == 1
    assert shop.refunds == [("credit:7", 50)]


async def test_another_body_under_a_used_key_is_refused_without_a_journal() -> None:
    shop = Shop()
    key = {"Idempotency-Key": "k-1"}
    async with (
        serving(create_app(shop_team(shop, PLAN, PLAN))) as url,
        httpx.AsyncClient(base_url=url) as c,
    ):
        first = await c.post("/runs?wait=true", json=GOAL | {"deps": {"user": "a"}}, headers=key)
        assert first.status_code == 200, first.text
        run_id = first.json()["run_id"]
        for body, differs in (
            ({"goal": "credit order 8", "deps": {"user": "a"}}, "another goal"),
            (GOAL | {"session": "s", "deps": {"user": "a"}}, "another session"),
            (GOAL | {"deps": {"user": "b"}}, "another deps"),
            (GOAL, "another deps"),
        ):
            refused = await c.post("/runs", json=body, headers=key)
            assert refused.status_code == 422, refused.text
            assert refused.json()["error"] == "Idempotency-Key reused"
            assert differs in refused.json()["detail"], refused.json()
            assert run_id in refused.json()["detail"]
        same = await c.post("/runs", json=GOAL | {"deps": {"user": "a"}}, headers=key)
        assert (same.status_code, same.json()["run_id"]) == (200, run_id)
        fresh = await c.post("/runs?wait=true", json=GOAL, headers={"Idempotency-Key": "k-2"})
        assert fresh.status_code == 200, fresh.text
        assert not _replayed(fresh)
        assert fresh.json()["run_id"] != run_id
        assert len((await c.get("/runs")).json()["runs"]) == 2
    assert shop.refunds == [("credit:7", 50)] * 2  # one per key


@pytest.mark.parametrize(
    "key", ["", "a" * 256, "two words", "tab\tbed", "caf\u00e9", "\u00e9t\u00e9"]
)
async def test_a_bad_key_is_a_400_that_says_what_a_key_is(key: str) -> None:
    shop = Shop()
    async with (
        serving(create_app(shop_team(shop, PLAN))) as url,
        httpx.AsyncClient(base_url=url) as c,
    ):
        raw = key.encode("latin-1")
        answer = await c.post("/runs", json=GOAL, headers=[(b"Idempotency-Key", raw)])
        assert answer.status_code == 400, answer.text
        assert answer.json()["error"] == "invalid Idempotency-Key"
        assert "1 to 255 visible ASCII characters" in answer.json()["detail"]
        twice = [(b"Idempotency-Key", b"a"), (b"Idempotency-Key", b"b")]
        answer = await c.post("/runs", json=GOAL, headers=twice)
        assert answer.status_code == 400, answer.text
        assert "given twice" in answer.json()["detail"]
        assert (await c.get("/runs")).json()["runs"] == []
        good = await c.post("/runs", json=GOAL, headers={"Idempotency-Key": "a" * 255})
        assert good.status_code == 202, good.text
    assert shop.refunds in ([], [("credit:7", 50)])


async def test_two_services_on_one_journal_start_one_run_for_a_key(journal: str) -> None:
    shop = Shop()
    async with (
        serving(create_app(shop_team(shop, PLAN), journal=journal)) as one,
        serving(create_app(shop_team(shop, PLAN), journal=journal)) as two,
        httpx.AsyncClient() as c,
    ):
        answers: list[httpx.Response] = []

        async def post(url: str) -> None:
            headers = {"Idempotency-Key": "shared"}
            answers.append(await c.post(f"{url}/runs?wait=true", json=GOAL, headers=headers))

        async with anyio.create_task_group() as tg:
            for url in (one, two, one, two):
                tg.start_soon(post, url)
        assert [a.status_code for a in answers] == [200] * 4, [a.text for a in answers]
        assert sum(not _replayed(a) for a in answers) == 1
        (run_id,) = {a.json()["run_id"] for a in answers}
        for url in (one, two):
            listed = (await c.get(f"{url}/runs")).json()["runs"]
            assert [r["run_id"] for r in listed] == [run_id]
    assert shop.refunds == [("credit:7", 50)]


async def test_a_keyed_waiter_that_hangs_up_leaves_its_run_to_its_retry() -> None:
    # A proxy that times a long ?wait=true out is why a client retries: the run it
    # posted with a key is not cancelled, and the retry waits for it.
    shop = Shop()
    slow = plan_json(step("s1", "slow", "slow 1"))
    key = {"Idempotency-Key": "long-wait"}
    async with (
        serving(create_app(shop_team(shop, slow))) as url,
        httpx.AsyncClient(base_url=url) as c,
    ):
        with pytest.raises(httpx.ReadTimeout):
            await c.post("/runs?wait=true", json=GOAL, headers=key, timeout=0.5)
        (listed,) = (await c.get("/runs")).json()["runs"]
        assert listed["status"] == "running"
        async with anyio.create_task_group() as tg:
            answers: list[httpx.Response] = []

            async def retry() -> None:
                answers.append(await c.post("/runs?wait=true", json=GOAL, headers=key))

            tg.start_soon(retry)
            shop.release.set()
        (answer,) = answers
        assert answer.status_code == 200, answer.text
        assert _replayed(answer)
        assert (answer.json()["run_id"], answer.json()["status"]) == (listed["run_id"], "completed")
    assert shop.slow_done == ["slow 1"]  # once


@pytest.mark.parametrize("anyio_backend", ["trio"])
async def test_keyed_posts_on_trio_mounted_under_a_prefix_with_a_token() -> None:
    shop = Shop()
    api = create_app(shop_team(shop, PLAN), token="t0k")
    outer = Starlette(routes=[Mount("/agents", app=api)], lifespan=api.router.lifespan_context)
    config = Config()
    config.bind = ["127.0.0.1:0"]
    shutdown = anyio.Event()
    headers = {"Authorization": "Bearer t0k", "Idempotency-Key": "trio-1"}
    async with anyio.create_task_group() as tg:
        served = functools.partial(serve, outer, config, shutdown_trigger=shutdown.wait)  # type: ignore[arg-type]
        (url,) = await tg.start(served)
        async with httpx.AsyncClient(base_url=url) as c:
            answers: list[httpx.Response] = []

            async def post() -> None:
                answers.append(await c.post("/agents/runs", json=GOAL, headers=headers))

            async with anyio.create_task_group() as posting:
                for _ in range(3):
                    posting.start_soon(post)
            assert sorted(a.status_code for a in answers) == [200, 200, 202]
            (run_id,) = {a.json()["run_id"] for a in answers}
            for answer in answers:
                assert answer.headers["location"] == f"/agents/runs/{run_id}"
                assert answer.json()["events_ticket"]
            done = await c.post("/agents/runs?wait=true", json=GOAL, headers=headers)
            assert (done.json()["run_id"], done.json()["status"]) == (run_id, "completed")
        shutdown.set()
    assert shop.refunds == [("credit:7", 50)]
