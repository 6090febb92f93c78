"""A keyed retry of ``POST /runs`` is compared with its first post's deps also after a
restart and from another process sharing the journal: the run's creation journals a hash
of the deps' canonical JSON (never the deps). A run from an older journal, whose creation
has no such hash, is compared by goal and session, as before. On a real SQLite file and a
real PostgreSQL server."""

from __future__ import annotations

import hashlib
import sqlite3

import anyio
import httpx2 as httpx
import msgspec
import psycopg
import pytest

from examples.service.serving import serving
from regiment.journal import RunCreated, deps_hash, open_journal
from regiment.serve import create_app
from tests.hierarchy.approval_team import Shop, plan_json, shop_team, step

pytestmark = pytest.mark.anyio

PLAN = plan_json(step("s1", "billing", "credit 7 50"))
GOAL = {"goal": "credit order 7"}
DEPS = {"user": "ann", "api_key": "sk-not-for-the-journal", "limits": [1, 2.5, None, True]}
KEY = {"Idempotency-Key": "deps-7"}


def _bodies(journal: str) -> list[bytes]:
    """Every record of the journal, as stored."""
    query = "SELECT body FROM journal_records"
    if journal.startswith("postgresql://"):
        with psycopg.connect(journal) as pg:
            return [bytes(b) for (b,) in pg.execute(query.encode()).fetchall()]
    with sqlite3.connect(journal) as lite:
        return [bytes(b) for (b,) in lite.execute(query).fetchall()]


def _as_older(journal: str, run_id: str) -> None:
    """Take ``deps_hash`` out of the run's creation, as a journal written before it has it."""
    select = "SELECT body FROM journal_records WHERE run_id = {p} AND seq = 1"
    update = "UPDATE journal_records SET body = {p} WHERE run_id = {p} AND seq = 1"

    def older(body: bytes) -> bytes:
        created = msgspec.json.decode(body)
        assert created["type"] == "run_created", created
        del created["deps_hash"]
        return msgspec.json.encode(created)

    if journal.startswith("postgresql://"):
        with psycopg.connect(journal) as pg:
            row = pg.execute(select.format(p="%s").encode(), (run_id,)).fetchone()
            assert row is not None
            pg.execute(update.format(p="%s").encode(), (older(bytes(row[0])), run_id))
        return
    with sqlite3.connect(journal) as lite:
        (body,) = lite.execute(select.format(p="?"), (run_id,)).fetchone()
        lite.execute(update.format(p="?"), (older(bytes(body)), run_id))


async def _created(journal: str, run_id: str) -> RunCreated:
    store = await open_journal(journal)
    try:
        first = (await store.read(run_id))[0].record
    finally:
        await store.close()
    assert isinstance(first, RunCreated)
    return first


async def _posted(shop: Shop, journal: str) -> str:
    """The id of the run a first keyed post with ``DEPS`` started (and that completed),
    its service stopped since."""
    async with (
        serving(create_app(shop_team(shop, PLAN), journal=journal)) as url,
        httpx.AsyncClient(base_url=url) as c,
    ):
        first = await c.post("/runs?wait=true", json=GOAL | {"deps": DEPS}, headers=KEY)
        assert first.status_code == 200, first.text
        run_id: str = first.json()["run_id"]
    return run_id


async def test_a_retry_after_a_restart_with_other_deps_is_refused(journal: str) -> None:
    shop = Shop()
    run_id = await _posted(shop, journal)
    created = await _created(journal, run_id)
    canonical = msgspec.json.encode(DEPS, order="sorted")
    assert created.deps_hash == hashlib.sha256(canonical).hexdigest()
    assert not [b for b in _bodies(journal) if b"sk-not-for-the-journal" in b]  # a hash only
    async with (
        serving(create_app(shop_team(shop, PLAN), journal=journal)) as url,
        httpx.AsyncClient(base_url=url) as c,
    ):
        for deps in ({"user": "bob"} | {k: v for k, v in DEPS.items() if k != "user"}, None, {}):
            body = GOAL if deps is None else GOAL | {"deps": deps}
            refused = await c.post("/runs", json=body, headers=KEY)
            assert refused.status_code == 422, refused.text
            assert "(run " + run_id + ", with another deps)" in refused.json()["detail"]
        reordered = dict(reversed(DEPS.items()))  # the same deps: keys in another order
        same = await c.post("/runs?wait=true", json=GOAL | {"deps": reordered}, headers=KEY)
        assert same.status_code == 200, same.text
        assert same.headers["idempotent-replayed"] == "true"
        assert (same.json()["run_id"], same.json()["status"]) == (run_id, "completed")
    assert shop.refunds == [("credit:7", 50)]


async def test_a_run_from_an_older_journal_is_compared_by_goal_and_session(journal: str) -> None:
    shop = Shop()
    run_id = await _posted(shop, journal)
    _as_older(journal, run_id)
    assert (await _created(journal, run_id)).deps_hash is None
    async with (
        serving(create_app(shop_team(shop, PLAN), journal=journal)) as url,
        httpx.AsyncClient(base_url=url) as c,
    ):
        other_deps = await c.post("/runs", json=GOAL | {"deps": {"user": "bob"}}, headers=KEY)
        assert other_deps.status_code == 200, other_deps.text  # its deps are not known
        assert other_deps.json() == {"run_id": run_id, "replayed": True}
        other_goal = await c.post("/runs", json={"goal": "credit order 8"}, headers=KEY)
        assert other_goal.status_code == 422, other_goal.text
        assert "with another goal and deps" not in other_goal.json()["detail"]
        assert "with another goal)" in other_goal.json()["detail"]
        view = (await c.get(f"/runs/{run_id}")).json()
        assert view["status"] == "completed", view
    assert shop.refunds == [("credit:7", 50)]


async def test_two_services_posting_one_key_with_other_deps_start_one_run(journal: str) -> None:
    # Whichever starts the run, the other service sees the run in the journal (started
    # there just now, or as it looks the key up) and compares its deps with the hash.
    shop = Shop()
    async with (
        serving(create_app(shop_team(shop, PLAN, PLAN), journal=journal)) as one,
        serving(create_app(shop_team(shop, PLAN, PLAN), journal=journal)) as two,
        httpx.AsyncClient() as c,
    ):
        answers: dict[str, httpx.Response] = {}

        async def post(url: str, user: str) -> None:
            body = GOAL | {"deps": {"user": user}}
            answers[user] = await c.post(f"{url}/runs?wait=true", json=body, headers=KEY)

        async with anyio.create_task_group() as tg:
            tg.start_soon(post, one, "ann")
            tg.start_soon(post, two, "bob")
        codes = sorted(a.status_code for a in answers.values())
        assert codes == [200, 422], [a.text for a in answers.values()]
        (started,) = [a for a in answers.values() if a.status_code == 200]
        (refused,) = [a for a in answers.values() if a.status_code == 422]
        assert started.json()["status"] == "completed", started.text
        assert "with another deps" in refused.json()["detail"], refused.text
        run_id = started.json()["run_id"]
        created = await _created(journal, run_id)
        user = "ann" if answers["ann"] is started else "bob"
        assert created.deps_hash == deps_hash({"user": user})
    assert shop.refunds == [("credit:7", 50)]
