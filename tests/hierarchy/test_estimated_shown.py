"""Where a run's usage is shown, the part of it that is an estimate is shown too: a model
call cut in flight is charged at its most (``RunResult.estimated_usage``), but
``regiment run``'s last line, ``regiment show`` (text and ``--json``), the service's run
view and a ``RunFailed`` carrying what a run got to showed ``usage`` alone, as if every
token of it had been billed so. (The Anthropic SDK against a stand-in that holds the
call, as tests/hierarchy/test_budget_cut_calls.py.)"""

from __future__ import annotations

import json
from pathlib import Path

import httpx2 as httpx
import msgspec
import pytest

from examples.service.serving import serving
from regiment.cli._view import describe
from regiment.hierarchy import RunCompleted, Team
from regiment.serve import create_app
from tests.cli.helpers import run_cli

from ..models.standin import StandIn
from .test_budget_cut_calls import Desk, api

pytestmark = pytest.mark.anyio

__all__ = ("api",)  # the fixture: a stand-in Messages API that holds the first call


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # uvicorn serves on asyncio only


async def test_a_cut_calls_estimate_is_shown_where_usage_is(api: StandIn, tmp_path: Path) -> None:
    where = str(tmp_path / "runs.db")
    async with desk_team(api).start(journal=where) as running:
        result = await running.run("probe and wrap")
    estimate = result.estimated_usage
    assert estimate.micro_usd > 0
    line = describe(RunCompleted(run_id=result.run_id, result=result))
    assert line is not None
    assert f"(of it estimated: {estimate.total_tokens} tokens, $" in line
    failed = describe(result.as_failed("RunError", "boom"))
    assert failed is not None
    assert "of it estimated" in failed
    assert result.as_failed("RunError", "boom").estimated_usage == estimate
    code, out, err = await run_cli("show", "--journal", where, result.run_id, "--json")
    assert code == 0, err
    shown = json.loads(out)
    assert shown["estimated_usage"] == msgspec.to_builtins(estimate)
    code, out, err = await run_cli("show", "--journal", where, result.run_id)
    assert code == 0, err
    assert f'of it estimated (calls cut in flight): {{"input_tokens":{estimate.input_tokens}' in out


async def test_the_service_shows_a_cut_calls_estimate(api: StandIn) -> None:
    async with (
        serving(create_app(desk_team(api))) as url,
        httpx.AsyncClient(base_url=url, timeout=60) as c,
    ):
        view = (await c.post("/runs?wait=true", json={"goal": "probe and wrap"})).json()
    assert view["status"] == "completed", view
    assert view["estimated_usage"]["output_tokens"] == 200  # the cut call's max_tokens
    assert view["estimated_usage"]["micro_usd"] > 0


def desk_team(api: StandIn) -> Team:
    return Desk(api).team()
