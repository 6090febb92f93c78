"""A run whose worker's model refuses every call alike, through the service: the
run's record says why, and it failed without a replan."""

from __future__ import annotations

from pathlib import Path

import httpx2 as httpx
import pytest

from examples.service.serving import serving
from regiment.errors import ModelAPIError
from regiment.hierarchy import Budget, Planner, Team, Worker
from regiment.models import ScriptedModel
from regiment.serve import create_app

from ..hierarchy.brains import SPENT, Brain, Siblings, plan_json, siblings_team
from ..models import messages_api
from ..models.standin import serve
from ..models.wires import WIRES

pytestmark = pytest.mark.anyio


async def test_a_worker_whose_key_is_refused_fails_its_run_at_once() -> None:
    async for api in serve(messages_api.error(401, "authentication_error", "invalid x-api-key")):
        brain = Brain([plan_json({"description": "look it up", "worker": "research"})])
        model = WIRES["anthropic"].make(api, True, 2)
        research = Worker(name="research", description="Looks things up.", model=model)
        team = Team(name="desk", planner=Planner(model=ScriptedModel(brain)), workers=[research])
        async with model, serving(create_app(team)) as url, httpx.AsyncClient(base_url=url) as c:
            done = await c.post("/runs?wait=true", json={"goal": "Look it up"})
            again = await c.get(f"/runs/{done.json()['run_id']}")
        body = done.json()
        assert body["status"] == "failed"
        assert body["error"].startswith("StepFailed: step s1 (look it up) ended failed:")
        assert "invalid x-api-key" in body["error"]
        assert "check the API key" in body["error"]
        assert "the run ends without a replan: worker 'research'" in body["error"]
        assert again.json() == body
        assert (len(brain.plan_requests), len(api.requests)) == (1, 1)


async def test_a_failed_runs_record_has_its_plans_steps_and_usage(tmp_path: Path) -> None:
    # s1 fails with no replan left while s2 and s3 wait in a tool: the record shows
    # all three steps (the siblings cancelled), the plan, and what the siblings spent.
    journal = str(tmp_path / "runs.db")
    siblings = Siblings(ModelAPIError("upstream broke", status_code=500))
    team = siblings_team(siblings, Budget(replans=0))
    async with (
        serving(create_app(team, journal=journal)) as url,
        httpx.AsyncClient(base_url=url) as c,
    ):
        done = (await c.post("/runs?wait=true", json={"goal": "Break and wait"})).json()
        live = (await c.get(f"/runs/{done['run_id']}")).json()
    assert done["status"] == "failed"
    assert "no replans left" in done["error"]
    assert [plan["version"] for plan in done["plans"]] == [1]
    steps = sorted((s["step_id"], s["status"]) for s in done["steps"])
    assert steps == [("s1", "failed"), ("s2", "cancelled"), ("s3", "cancelled")]
    assert done["usage"]["input_tokens"] >= 2 * SPENT.input_tokens
    assert (done["committed"], done["output"], done["answer"]) == ([], {}, None)
    assert live == done
    # After a restart, the same record from the journal.
    again = siblings_team(Siblings(None), Budget(replans=0))
    async with (
        serving(create_app(again, journal=journal)) as url,
        httpx.AsyncClient(base_url=url) as c,
    ):
        shown = (await c.get(f"/runs/{done['run_id']}")).json()
    assert shown == done
