"""``POST /runs/{id}/cancel`` of a live run whose end has come and is being journaled: the
run ends as it did (``completed``), so the cancel answers ``"cancelling": false``, with
the status and a ``detail`` saying it had already ended. It answered ``true`` (3 of 20
resume+cancel races), and the run then read ``completed``. The window is held open by
another connection holding the journal's write lock while the run's end is written (real
uvicorn + httpx, a real SQLite file and a real PostgreSQL server). A run whose end is a
pause is cancelled as a paused run once the pause is written (it stayed paused)."""

from __future__ import annotations

import anyio
import httpx2 as httpx
import pytest

from examples.service.serving import serving
from examples.service.team import order_status, support_brain
from regiment.hierarchy import Planner, Team, Worker
from regiment.models import ModelRequest, ModelResponse, ScriptedModel
from regiment.serve import create_app
from tests.hierarchy.approval_team import Shop, plan_json, shop_team, step
from tests.serve.journals import hold_write_lock

pytestmark = pytest.mark.anyio


def _gated_team(started: anyio.Event, go: anyio.Event) -> Team:
    """The support team whose answer (the synthesis' model call) sets ``started``, then
    waits for ``go`` (nothing after it waits for the journal but the run's end)."""

    async def brain(request: ModelRequest) -> ModelResponse:
        if request.role not in ("planner", "worker"):
            started.set()
            await go.wait()
        return support_brain(request)

    model = ScriptedModel(brain)
    worker = Worker(name="support", description="Orders.", model=model, tools=[order_status])
    return Team(name="support", planner=Planner(model=model), workers=[worker])


async def test_a_cancel_as_the_runs_end_is_journaled_says_it_had_ended(journal: str) -> None:
    started, go = anyio.Event(), anyio.Event()
    app = create_app(_gated_team(started, go), journal=journal)
    async with serving(app) as url, httpx.AsyncClient(base_url=url, timeout=60) as c:
        posted = await c.post("/runs", json={"goal": "where is order 55001?"})
        run_id = posted.json()["run_id"]
        with anyio.fail_after(20):  # guards against a hang: the assertions are below
            await started.wait()
        holder = hold_write_lock(journal, run_id)  # the run's end waits for it to be written
        try:
            go.set()
            runs = app.state.regiment_service.runs
            with anyio.fail_after(20):
                while runs.closing(run_id) is None:  # until its end came; its journal waits
                    await anyio.lowlevel.checkpoint()
            cancel = await c.post(f"/runs/{run_id}/cancel")
            during = (await c.get(f"/runs/{run_id}")).json()["status"]
        finally:
            holder.close()
        with anyio.fail_after(20):
            while (view := (await c.get(f"/runs/{run_id}")).json())["status"] == "running":
                pass
        again = await c.post(f"/runs/{run_id}/cancel")
    assert cancel.status_code == 202, cancel.text
    body = cancel.json()
    assert (body["cancelling"], body["status"]) == (False, "completed"), body
    assert "has already ended (completed)" in body["detail"], body
    assert during == "running"  # the window was open: its end not yet journaled
    assert view["status"] == "completed", view
    assert view["answer"] == "order 55001: in the warehouse"
    assert again.json()["cancelling"] is False
    assert "has already ended (completed): nothing to cancel" in again.json()["detail"]


async def test_a_cancel_as_a_runs_pause_is_journaled_cancels_the_paused_run(journal: str) -> None:
    # It answered true, and the run, whose end (a pause) had come, stayed paused.
    shop = Shop()
    plan = plan_json(step("s1", "billing", "refund 2 500"), step("s2", "slow", "slow 1"))
    app = create_app(shop_team(shop, plan), journal=journal)
    service = app.state.regiment_service
    async with serving(app) as url, httpx.AsyncClient(base_url=url, timeout=60) as c:
        run_id = (await c.post("/runs", json={"goal": "refund, and slow"})).json()["run_id"]
        with anyio.fail_after(20):  # guards against a hang: the assertions are below
            while not (await c.get("/approvals")).json()["approvals"]:
                pass  # its request is journaled; its slow step holds its pause
        holder = hold_write_lock(journal, run_id)  # the pause's end waits for it to be written
        answers: list[httpx.Response] = []
        try:
            shop.release.set()
            with anyio.fail_after(20):
                while service.runs.closing(run_id) is None:  # until its pause came
                    await anyio.lowlevel.checkpoint()
            ended = service.runs.closing(run_id).result.status
            async with anyio.create_task_group() as tg:

                async def cancel() -> None:
                    answers.append(await c.post(f"/runs/{run_id}/cancel"))

                tg.start_soon(cancel)
                record = service.store.get(run_id)
                with anyio.fail_after(20):  # until the cancel waits for the pause's write
                    while record.ended.statistics().tasks_waiting == 0:
                        await anyio.lowlevel.checkpoint()
                assert not answers
                holder.close()
        finally:
            holder.close()
        view = (await c.get(f"/runs/{run_id}")).json()
        resumed = await c.post(f"/runs/{run_id}/resume")
    assert ended == "paused"
    (answer,) = answers
    assert answer.json() == {"run_id": run_id, "cancelling": True}, answer.text
    assert view["status"] == "cancelled", view
    assert resumed.status_code == 409, resumed.text
    assert shop.refunds == []
