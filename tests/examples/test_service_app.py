"""The service example's app over real HTTP: its own route, the mounted team, auth."""

from __future__ import annotations

import httpx2 as httpx
import pytest

from examples.service.app import build_app
from examples.service.serving import serving
from examples.service.team import build_team, support_brain
from regiment.models import ScriptedModel

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # uvicorn serves on asyncio; tests/serve runs the app on trio too


async def test_the_service_mounts_the_team_under_agents() -> None:
    app = build_app(build_team(ScriptedModel(support_brain)), token="tok")
    async with serving(app) as url, httpx.AsyncClient(base_url=url) as client:
        home = (await client.get("/")).json()
        assert home == {"service": "orders", "agents": f"{url}/agents/"}
        assert (await client.get("/agents/health")).json() == {"status": "ok"}
        goal = {"goal": "What is the status of order 77120?"}
        assert (await client.post("/agents/runs?wait=true", json=goal)).status_code == 401
        done = await client.post(
            "/agents/runs?wait=true", json=goal, headers={"Authorization": "Bearer tok"}
        )
        assert done.status_code == 200
        assert done.json()["answer"] == "order 77120: shipped 12 days ago"
