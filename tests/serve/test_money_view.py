"""The service's run view gives a priced run's cost (``usage.micro_usd``) as it gives its
tokens, and a money budget's end (``budget_exhausted: "usd"``)."""

from __future__ import annotations

import dataclasses

import httpx2 as httpx
import pytest

from examples.service.serving import serving
from examples.service.team import build_team, support_brain
from regiment.hierarchy import Budget
from regiment.models import Price, ScriptedModel
from regiment.serve import create_app

pytestmark = pytest.mark.anyio

GOAL = "What is the status of order 77120?"
PRICE = Price(input=3.0, output=15.0)


async def _view(budget: Budget) -> dict[str, object]:
    team = dataclasses.replace(build_team(ScriptedModel(support_brain, price=PRICE)), budget=budget)
    async with serving(create_app(team)) as url, httpx.AsyncClient(base_url=url) as client:
        done = await client.post("/runs?wait=true", json={"goal": GOAL})
        assert done.status_code == 200
        run_id = done.json()["run_id"]
        view = await client.get(f"/runs/{run_id}")
        assert view.status_code == 200
        body: dict[str, object] = view.json()
        return body


async def test_a_priced_runs_view_gives_what_it_cost() -> None:
    body = await _view(Budget(usd=1.0))
    assert body["status"] == "completed"
    usage = body["usage"]
    assert isinstance(usage, dict)
    assert usage["micro_usd"] > 0
    expected = 3 * usage["input_tokens"] + 15 * usage["output_tokens"]  # whole micro-dollars
    assert usage["micro_usd"] == expected


async def test_a_runs_view_names_a_spent_money_budget() -> None:
    body = await _view(Budget(usd=0.0001))
    assert (body["status"], body["budget_exhausted"]) == ("partial", "usd")
