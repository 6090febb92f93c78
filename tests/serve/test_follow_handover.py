"""A follower on this service of a run another service runs, when that service's process
dies and this service resumes the run (``POST /runs/{id}/resume``) as it is followed: the
stream moves from the journal's reads to the resumed run, live, and gets every event
once, in order, to the run's ``RunCompleted``, as a replay of the run has them.

The resume is posted while another connection holds the journal's write lock, so its
lease's write waits (the owner still runs then: this service's reads see the resume under
way, not a run nobody runs); the owner is SIGKILLed and the lock let go, and the resume
takes the run over. Real uvicorn + httpx, a real ``shop_child`` process, on a real
SQLite file and a real PostgreSQL server.
"""

from __future__ import annotations

import anyio
import httpx2 as httpx
import pytest

from examples.service.serving import serving
from regiment.serve import create_app
from tests.hierarchy.approval_team import Shop, plan_json, shop_team, step
from tests.serve.hearing import hearing
from tests.serve.journals import hold_write_lock
from tests.serve.shop_child import shop_child
from tests.serve.sse import frames, run_events
from tests.serve.test_follow_elsewhere import HELD, _rest, _until

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(120)]

SLOW = plan_json(step("s1", "slow", "slow 1"))
READ = "run resuming: its journal read"
WAITS = "a follower waits for the run's resume here"


async def test_a_follower_moves_to_the_run_this_service_resumes(journal: str) -> None:
    shop = Shop()
    resumed: list[httpx.Response] = []
    async with (
        shop_child(journal, SLOW) as (one, child),
        serving(create_app(shop_team(shop, SLOW), journal=journal)) as two,
        httpx.AsyncClient(timeout=60) as c,
    ):
        run_id = (await c.post(f"{one}/runs", json={"goal": "slow order 1"})).json()["run_id"]
        async with c.stream("GET", f"{two}/runs/{run_id}/events") as response:
            events = frames(response)
            before = await _until(events, "StepDispatched")
            read, waits = anyio.Event(), anyio.Event()
            holder = hold_write_lock(journal, run_id)
            try:
                with anyio.fail_after(30), hearing(READ, read), hearing(WAITS, waits):
                    async with anyio.create_task_group() as tg:

                        async def resume() -> None:
                            resumed.append(await c.post(f"{two}/runs/{run_id}/resume"))

                        tg.start_soon(resume)
                        await read.wait()  # its history read; its lease's write waits
                        await waits.wait()  # the follower saw the resume under way here
                        child.kill()
                        await child.wait()
                        holder.close()  # the resume takes the dead owner's run over
            finally:
                holder.close()
            shop.release.set()  # the resumed run's step, here, ends
            after = await _rest(events)
        async with httpx.AsyncClient(base_url=two, timeout=60) as d:
            replayed = await run_events(d, run_id)
            view = (await d.get(f"/runs/{run_id}")).json()
    (answer,) = resumed
    assert answer.status_code == 202, answer.text
    assert [f.event for f in before] == HELD
    followed = before + after
    assert [f.id for f in followed] == list(range(1, len(followed) + 1))  # none lost or twice
    assert followed == replayed
    assert followed[-1].event == "RunCompleted"
    assert view["status"] == "completed"
    assert shop.slow_done == ["slow 1"]  # run here, once
