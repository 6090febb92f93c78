"""A run another service runs asks for an approval while its other step still works, and
that service's process is SIGKILLed before the run gets to its pause: a follower of its
events on this service, and a keyed ``?wait=true`` retry waiting for it here, end with
the journal's ``stalled`` (a ``StreamEnd`` that says to resume it; the view, with the
request still pending), as for a run killed while it ran.

They went on until their clients left: the journal listed the run ``paused`` for as long
as its request was undecided, and a ``paused`` run goes on until its pause's
``RunCompleted``, which never came. Real uvicorn + httpx, a real ``shop_child`` process
killed, on a real SQLite file and a real PostgreSQL server.
"""

from __future__ import annotations

import anyio
import httpx2 as httpx
import pytest

from examples.service.serving import serving
from regiment.serve import create_app
from tests.hierarchy.approval_team import Shop, plan_json, shop_team, step
from tests.serve.hearing import hearing
from tests.serve.shop_child import shop_child
from tests.serve.sse import frames
from tests.serve.test_follow_elsewhere import _rest, _until

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(120)]

ASKS = plan_json(step("s1", "slow", "slow 1"), step("s2", "billing", "refund 88213 40"))
GOAL = {"goal": "slow order 1"}
KEY = {"Idempotency-Key": "asks-1"}


async def test_a_follower_and_a_wait_end_stalled_when_the_owner_dies_before_its_pause(
    journal: str,
) -> None:
    async with (
        shop_child(journal, ASKS) as (one, child),
        serving(create_app(shop_team(Shop(), ASKS), journal=journal)) as two,
        httpx.AsyncClient(timeout=60) as c,
    ):
        run_id = (await c.post(f"{one}/runs", json=GOAL, headers=KEY)).json()["run_id"]
        answers: list[httpx.Response] = []
        async with c.stream("GET", f"{two}/runs/{run_id}/events") as response:
            events = frames(response)
            before = await _until(events, "ApprovalRequested")  # (its step s1 still works)
            assert (await c.get(f"{two}/runs/{run_id}")).json()["status"] == "paused"
            waiting = anyio.Event()
            with anyio.fail_after(30):  # on main: they waited for ever (the journal said paused)
                async with anyio.create_task_group() as tg:

                    async def retry() -> None:
                        answers.append(
                            await c.post(f"{two}/runs?wait=true", json=GOAL, headers=KEY)
                        )

                    with hearing("waits for a run another process runs", waiting):
                        tg.start_soon(retry)
                        await waiting.wait()
                    child.kill()  # SIGKILL: no pause, no lease given up
                    await child.wait()
                    after = await _rest(events)
        view = (await c.get(f"{two}/runs/{run_id}")).json()
    assert [f.id for f in before] == list(range(1, len(before) + 1))
    (end,) = after
    assert (end.event, end.id) == ("StreamEnd", None)
    assert end.data is not None
    assert (end.data["status"], end.data["last_event_id"]) == ("stalled", len(before)), end.data
    detail = str(end.data["detail"])
    assert f"POST /runs/{run_id}/resume finishes it" in detail, detail
    assert f"Last-Event-ID: {len(before)}" in detail, detail
    (answer,) = answers
    assert answer.status_code == 200, answer.text
    assert answer.headers["idempotent-replayed"] == "true"
    assert (answer.json()["run_id"], answer.json()["status"]) == (run_id, "stalled")
    assert view["status"] == "stalled"
    assert [(p["tool"], p["arguments"]) for p in view["pending_approvals"]] == [
        ("issue_refund", {"order_id": "88213", "amount": 40})
    ]
    assert (view["model_calls"], view["tool_calls"]) == (None, None)  # no end came
