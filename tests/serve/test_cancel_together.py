"""Two ``POST /runs/{id}/cancel`` of a paused run, posted together to a service that reads
the run from its journal (it paused before a restart): one cancels it, the other answers
``"cancelling": false`` saying it has already ended (cancelled). It said "paused in another
process that shares this service's journal: cancel it there", from the record it had read
before the first cancel's write. The journal's write lock, held by another connection,
keeps both cancels waiting for the run's lease until both hold it briefly (real uvicorn +
httpx, a real SQLite file and a real PostgreSQL server)."""

from __future__ import annotations

import anyio
import httpx2 as httpx
import pytest

from examples.service.serving import serving
from regiment.hierarchy.run import _brief_holds
from regiment.serve import create_app
from tests.hierarchy.approval_team import Shop, shop_team
from tests.serve.journals import PLAN, hold_write_lock

pytestmark = pytest.mark.anyio


async def test_of_two_cancels_posted_together_the_second_says_it_had_ended(journal: str) -> None:
    async with (
        serving(create_app(shop_team(Shop(), PLAN), journal=journal)) as url,
        httpx.AsyncClient(base_url=url, timeout=60) as c,
    ):
        run_id = (await c.post("/runs?wait=true", json={"goal": "a refund"})).json()["run_id"]
    async with (  # restarted: the run is the journal's
        serving(create_app(shop_team(Shop(), PLAN), journal=journal)) as url,
        httpx.AsyncClient(base_url=url, timeout=60) as c,
    ):
        assert (await c.get(f"/runs/{run_id}")).json()["status"] == "paused"
        answers: list[dict[str, object]] = []
        holder = hold_write_lock(journal, run_id)
        try:
            async with anyio.create_task_group() as tg:

                async def cancel() -> None:
                    answers.append((await c.post(f"/runs/{run_id}/cancel")).json())

                tg.start_soon(cancel)
                tg.start_soon(cancel)
                with anyio.fail_after(20):  # a guard: both read the run, then wait for its lease
                    while len(_brief_holds._held.get(run_id, ())) < 2:
                        await anyio.lowlevel.checkpoint()
                holder.close()
        finally:
            holder.close()
        view = (await c.get(f"/runs/{run_id}")).json()
    assert sorted(str(a["cancelling"]) for a in answers) == ["False", "True"], answers
    (second,) = [a for a in answers if a["cancelling"] is False]
    assert second["status"] == "cancelled", second
    assert str(second["detail"]).startswith(f"run {run_id} has already ended (cancelled)")
    assert view["status"] == "cancelled"
