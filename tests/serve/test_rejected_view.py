"""A step its check rejected, as the service shows it (under real uvicorn): the CLI's
live view says "rejected by its check ..."; ``GET /runs/{id}`` says why too, while the
run goes on, once it has ended, and read back from the journal after a restart."""

from __future__ import annotations

from pathlib import Path

import anyio
import httpx2 as httpx
import pytest

from examples.service.serving import serving
from regiment.models import ModelRequest, ModelResponse, ToolResultPart
from regiment.serve import create_app
from tests.hierarchy.brains import Brain, plan_json
from tests.hierarchy.replan_team import PROBE, RECOVER, replan_team
from tests.serve.sse import run_events

pytestmark = pytest.mark.anyio

WHY = {"s1": "rejected by its check 'fails': not met: never passes"}


async def test_a_rejected_step_says_why_live_ended_and_after_a_restart(tmp_path: Path) -> None:
    release = anyio.Event()
    recovering = anyio.Event()

    async def work(
        description: str, results: list[ToolResultPart], request: ModelRequest
    ) -> ModelResponse | str:
        if description == "recover":  # the replan's step holds the run while it is looked at
            recovering.set()
            await release.wait()
        return f"did: {description}"

    journal = str(tmp_path / "runs.db")
    team = replan_team(Brain([plan_json(PROBE), RECOVER], work=work))
    async with (
        serving(create_app(team, journal=journal)) as url,
        httpx.AsyncClient(base_url=url) as c,
    ):
        run_id = (await c.post("/runs", json={"goal": "probe, then recover"})).json()["run_id"]
        await recovering.wait()
        live = (await c.get(f"/runs/{run_id}")).json()
        assert live["status"] == "running"
        # It had no word of the rejected step until the run ended.
        assert (live["rejected"], live["rejections"]) == (["s1"], WHY)
        release.set()
        assert (await run_events(c, run_id))[-1].event == "RunCompleted"  # read to its end
        ended = (await c.get(f"/runs/{run_id}")).json()
        assert ended["status"] == "completed"
        assert (ended["committed"], ended["rejected"]) == (["s2"], ["s1"])
        assert ended["rejections"] == WHY  # it had the ids only: the reason was in an event
    async with (
        serving(create_app(team, journal=journal)) as url,
        httpx.AsyncClient(base_url=url) as c,
    ):
        replayed = (await c.get(f"/runs/{run_id}")).json()
    assert (replayed["rejected"], replayed["rejections"]) == (["s1"], WHY)


async def test_a_step_run_again_and_held_is_no_longer_rejected() -> None:
    # The replan lists s1 again: it runs again and holds (a check that passes the second time).
    again = plan_json({"id": "s1", "description": "probe again"})
    team = replan_team(Brain([plan_json(PROBE), again]))
    async with serving(create_app(team)) as url, httpx.AsyncClient(base_url=url) as c:
        view = (await c.post("/runs?wait=true", json={"goal": "probe twice"})).json()
    assert view["status"] == "completed"
    assert (view["committed"], view["rejected"], view["rejections"]) == (["s1"], [], {})
