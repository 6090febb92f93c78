"""A run whose worker's model refuses every call alike, through the service: the
run's record says why, and it failed without a replan."""

from __future__ import annotations

import httpx2 as httpx
import pytest

from examples.service.serving import serving
from regiment.hierarchy import Planner, Team, Worker
from regiment.models import ScriptedModel
from regiment.serve import create_app

from ..hierarchy.brains import Brain, plan_json
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
