"""``POST /runs/{id}/cancel`` of a paused run whose requests were all decided since (it
lists ``stalled``, waiting for ``POST /runs/{id}/resume``): it ends ``cancelled``. Before,
the service answered ``{"cancelling": false}`` and the run stayed resumable, though the
cancel and the approve had come together. A journal whose write lock another connection
holds answers such a cancel with a 503 (logged) once the journal's own lock wait is out,
not a request that hangs; the cancel then works once the lock is gone (real uvicorn +
httpx, a real SQLite file and a real PostgreSQL server)."""

from __future__ import annotations

import logging
from pathlib import Path

import anyio
import httpx2 as httpx
import pytest

from examples.service.serving import serving
from regiment.errors import LeaseLost
from regiment.hierarchy.run._brief_holds import BriefHold
from regiment.hierarchy.run._journaling import owner_name
from regiment.journal import Journal, PostgresJournal, SqliteJournal, open_journal
from regiment.serve import create_app
from tests.hierarchy.approval_team import Shop, shop_team
from tests.journal.records import created, new_id
from tests.serve.journals import PLAN, hold_write_lock

pytestmark = pytest.mark.anyio


async def _decided(c: httpx.AsyncClient) -> str:
    """A run that paused for one approval, approved since: its id (it lists ``stalled``)."""
    paused = (await c.post("/runs?wait=true", json={"goal": "a refund"})).json()
    run_id = str(paused["run_id"])
    (request,) = (await c.get("/approvals")).json()["approvals"]
    decided = await c.post(f"/approvals/{request['request_id']}", json={"decision": "approve"})
    assert decided.status_code == 200, decided.text
    assert (await c.get(f"/runs/{run_id}")).json()["status"] == "stalled"
    return run_id


async def test_a_decided_paused_run_is_cancelled_over_http(journal: str) -> None:
    shop = Shop()
    async with (
        serving(create_app(shop_team(shop, PLAN), journal=journal)) as url,
        httpx.AsyncClient(base_url=url) as c,
    ):
        run_id = await _decided(c)
        cancel = await c.post(f"/runs/{run_id}/cancel")
        assert (cancel.status_code, cancel.json()) == (202, {"run_id": run_id, "cancelling": True})
        view = (await c.get(f"/runs/{run_id}")).json()
        assert view["status"] == "cancelled", view
        resumed = await c.post(f"/runs/{run_id}/resume")
        assert resumed.status_code == 409, resumed.text
        assert (await c.post(f"/runs/{run_id}/cancel")).json()["cancelling"] is False  # once
    async with (  # the service restarts: the journal has the run cancelled
        serving(create_app(shop_team(shop, PLAN), journal=journal)) as url,
        httpx.AsyncClient(base_url=url) as c,
    ):
        assert (await c.get(f"/runs/{run_id}")).json()["status"] == "cancelled"
        assert (await c.post(f"/runs/{run_id}/resume")).status_code == 409
    assert shop.refunds == []


async def _short_wait(journal: str) -> Journal:
    """``journal`` opened so that a write waits 1 s for another's lock, not 30 s."""
    if journal.startswith("postgresql://"):
        return await PostgresJournal.open(journal, lock_timeout=1.0)
    return await SqliteJournal.open(journal, busy_timeout=1.0)


async def test_a_cancel_the_journal_lock_holds_is_503_then_cancels_once_it_is_gone(
    journal: str, caplog: pytest.LogCaptureFixture
) -> None:
    # Before: a cancel of a decided run waited in its lease's write for as long as the
    # lock was held (the service's cancel route had hung a request, and a test).
    shop, opened = Shop(), await _short_wait(journal)
    try:
        async with (
            serving(create_app(shop_team(shop, PLAN), journal=opened)) as url,
            httpx.AsyncClient(base_url=url, timeout=60) as c,
        ):
            run_id = await _decided(c)
            holder = hold_write_lock(journal, run_id)
            try:
                with caplog.at_level(logging.ERROR, logger="regiment"), anyio.fail_after(20):
                    refused = await c.post(f"/runs/{run_id}/cancel")  # (fail_after: a guard)
                still = (await c.get(f"/runs/{run_id}")).json()["status"]
            finally:
                holder.close()  # its transaction is rolled back
            cancel = await c.post(f"/runs/{run_id}/cancel")
            view = (await c.get(f"/runs/{run_id}")).json()
            resumed = await c.post(f"/runs/{run_id}/resume")
    finally:
        await opened.close()
    assert refused.status_code == 503, refused.text
    assert refused.json()["error"] == "journal unavailable"
    assert refused.json()["detail"].endswith("; try again once it is back")
    assert any(
        r.levelno == logging.ERROR and "journal unavailable" in r.getMessage()
        for r in caplog.records
    )
    assert still == "stalled"  # nothing changed: the run still waits for its resume
    assert cancel.json() == {"run_id": run_id, "cancelling": True}
    assert view["status"] == "cancelled", view
    assert resumed.status_code == 409, resumed.text
    assert shop.refunds == []


async def test_a_cancel_of_a_run_stalled_mid_work_ends_it_past_its_lease(journal: str) -> None:
    # A run whose owner stopped renewing its lease mid-work (not at a pause) lists
    # `stalled`. A cancel answered a 409 saying to resume it, then cancel (a resume could
    # run a call in flight again); now it takes the lapsed lease, as a resume would, and
    # ends the run `cancelled` from its journal: the owner (only frozen) has lost it.
    run_id = new_id()
    owner = await open_journal(journal)
    try:
        lease = await owner.create_run(created(run_id), owner="other:1", ttl=1.0)
        async with (
            serving(create_app(shop_team(Shop(), PLAN), journal=journal)) as url,
            httpx.AsyncClient(base_url=url) as c,
        ):
            with anyio.fail_after(20):  # a guard: the lease runs out after 1 s
                while (await c.get(f"/runs/{run_id}")).json()["status"] != "stalled":
                    pass
            cancel = await c.post(f"/runs/{run_id}/cancel")
            view = (await c.get(f"/runs/{run_id}")).json()
        with pytest.raises(LeaseLost):  # the cancel took it
            await owner.renew(lease, ttl=60)
        status = (await owner.get_run(run_id)).status
    finally:
        await owner.close()
    assert cancel.status_code == 202, cancel.text
    assert cancel.json() == {"run_id": run_id, "cancelling": True}
    assert (view["status"], status) == ("cancelled", "cancelled")


async def test_an_approve_and_a_cancel_posted_together_end_the_run_cancelled(journal: str) -> None:
    # user21's race: whichever lands first (here, mostly the cancel: the run is paused,
    # and the approve is refused), the cancel wins; one landing after the approve
    # answered `cancelling: false` (the test above is that order, made certain).
    shop = Shop()
    async with (
        serving(create_app(shop_team(shop, PLAN), journal=journal)) as url,
        httpx.AsyncClient(base_url=url, timeout=60) as c,
    ):
        run_id = (await c.post("/runs?wait=true", json={"goal": "a refund"})).json()["run_id"]
        (request,) = (await c.get("/approvals")).json()["approvals"]
        answers: dict[str, httpx.Response] = {}

        async def post(name: str, path: str, body: dict[str, str] | None = None) -> None:
            answers[name] = await c.post(path, json=body)

        async with anyio.create_task_group() as tg:
            approve = {"decision": "approve"}
            tg.start_soon(post, "approve", f"/approvals/{request['request_id']}", approve)
            tg.start_soon(post, "cancel", f"/runs/{run_id}/cancel")
        view = (await c.get(f"/runs/{run_id}")).json()
        resumed = await c.post(f"/runs/{run_id}/resume")
    assert answers["cancel"].json() == {"run_id": run_id, "cancelling": True}
    assert answers["approve"].status_code in (200, 409), answers["approve"].text
    assert view["status"] == "cancelled", view
    assert resumed.status_code == 409, resumed.text
    assert shop.refunds == []


async def test_a_cancel_while_a_decision_is_recorded_waits_it_out(tmp_path: Path) -> None:
    # A decision being recorded holds the run's lease for a moment, and the journal lists
    # the run `running` meanwhile: a cancel then (an approve and a cancel posted together)
    # answered `cancelling: false` and the run stayed resumable (1 race in 40 here).
    shop, opened = Shop(), await SqliteJournal.open(tmp_path / "runs.db")
    try:
        async with (
            serving(create_app(shop_team(shop, PLAN), journal=opened)) as url,
            httpx.AsyncClient(base_url=url, timeout=60) as c,
        ):
            run_id = await _decided(c)
            answers: list[httpx.Response] = []

            async def cancel() -> None:
                answers.append(await c.post(f"/runs/{run_id}/cancel"))

            async with anyio.create_task_group() as tg:
                with BriefHold(run_id, "having an approval decision recorded"):  # a decider's
                    lease = await opened.acquire(run_id, owner=owner_name(), ttl=30)
                    listed = (await opened.get_run(run_id)).status
                    tg.start_soon(cancel)
                    await anyio.sleep(0.2)  # (the cancel meets the hold, or comes after it)
                    await opened.release(lease)
            view = (await c.get(f"/runs/{run_id}")).json()
    finally:
        await opened.close()
    assert listed == "running"  # what the cancel read in the journal, and gave up
    (answer,) = answers
    assert answer.json() == {"run_id": run_id, "cancelling": True}
    assert view["status"] == "cancelled", view
    assert shop.refunds == []
