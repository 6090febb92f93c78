"""A Ray-placed step cut by a replan or the run's cancel while its replica's model call
is in flight: the live run charges that call at its most, as it does an in-process
step's (``tests/hierarchy/test_budget_cut_calls.py``) and a lost replica's
(``test_ray_lost_in_flight``), since the provider bills it though no usage came back.
It used to count it only if the replica died: a cut step's call counted $0.

The stand-in Messages API holds the call (never answers it) and bills each request it
gets at least the usage it reports for an answered one.
"""

from __future__ import annotations

import logging
import re
from collections.abc import AsyncIterator
from pathlib import Path
from types import ModuleType

import pytest

from regiment.hierarchy import Budget, RunCompleted, RunResult
from regiment.hierarchy._replay import Replay
from regiment.journal import open_journal
from regiment.models import Usage, priced

from ..models import messages_api
from ..models.standin import Reply, StandIn, serve
from ._cut import CLAUDE, USD, Desk

pytestmark = [pytest.mark.anyio, pytest.mark.ray, pytest.mark.timeout(180)]  # Ray starts processes

# What the stand-in bills a request, at the least: the usage an answered one reports.
BILLED = priced(Usage(input_tokens=11, output_tokens=7), CLAUDE).micro_usd


@pytest.fixture
async def api() -> AsyncIterator[StandIn]:
    async for server in serve(messages_api.message([{"type": "text", "text": "held"}])):
        server.queue(Reply(200, {}, hold=True))  # the first call is never answered
        yield server


def _most(caplog: pytest.LogCaptureFixture, run_id: str) -> int:
    """What the one INFO line about the cut call says it was charged, in micro-dollars."""
    (said,) = [r.getMessage() for r in caplog.records if "cut in flight" in r.getMessage()]
    assert f"run {run_id}: worker 'slow', step s1: its model call step/1/s1/1 was cut" in said
    return int(float(re.findall(r"\$(\d+\.\d+)", said)[0]) * 1_000_000 + 0.5)


def _counted(result: RunResult, api: StandIn, most: int) -> None:
    """The cut call is counted once (at its most, an estimate), never less than billed,
    and within the budget."""
    assert len(api.requests) == 1  # the held call: the only one the provider got
    spent = result.usage_by_role["slow"]
    assert spent.micro_usd == most >= BILLED * len(api.requests)
    assert result.estimated_usage.micro_usd == most
    assert result.estimated_usage.output_tokens == 200  # its max_tokens: the most it could write
    assert result.usage.micro_usd <= USD * 1_000_000


async def test_a_ray_call_cut_by_a_replan_is_charged_at_its_most(
    ray_session: ModuleType, api: StandIn, caplog: pytest.LogCaptureFixture, tmp_path: Path
) -> None:
    caplog.set_level(logging.INFO, logger="regiment.run")
    journal = await open_journal(str(tmp_path / "runs.db"))
    try:
        async with Desk(api).team().start(journal=journal) as running:
            result = await running.run("probe and wrap")
        entries = await journal.read(result.run_id)
    finally:
        await journal.close()
    assert (result.status, result.committed) == ("completed", ("s3",)), result.events
    most = _most(caplog, result.run_id)
    _counted(result, api, most)
    assert result.model_calls == 6  # plan, s1's cut call, s2, replan, s3, synthesis
    # A later resume counts it once, from the journal: its intent has no reply, and the
    # step's dropped report carries none of it.
    replay = Replay.of(entries)
    (lost,) = replay.unanswered()
    assert (lost.call_key, lost.role, lost.most.micro_usd) == ("step/1/s1/1", "slow", most)
    assert (1, "s1") not in replay.committed


@pytest.mark.parametrize("budget", [None, Budget(model_calls=20)], ids=["usd", "model-calls-only"])
async def test_a_ray_call_cut_by_the_runs_cancel_is_charged_at_its_most(
    ray_session: ModuleType,
    api: StandIn,
    caplog: pytest.LogCaptureFixture,
    budget: Budget | None,
) -> None:
    """Under a budget on model calls alone too: as in-process, the cut call counts (one
    model call, at its most); the replica now tells its calls' intents under it as well."""
    caplog.set_level(logging.INFO, logger="regiment.run")
    desk = Desk(api, probe=False)
    async with desk.team(budget).start() as running:
        async with running.stream("hold") as events:
            async for _ in events:
                await desk.held()
                break  # leaving the block cancels the run
        ending = events.ending
    assert isinstance(ending, RunCompleted)
    result = ending.result
    assert result.status == "cancelled"
    _counted(result, api, _most(caplog, result.run_id))
    assert result.model_calls == 2  # the plan, and s1's cut call


async def test_a_ray_call_cut_by_the_wall_clock_is_charged_at_its_most(
    ray_session: ModuleType, api: StandIn, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="regiment.run")
    team = Desk(api, probe=False).team(Budget(usd=USD, wall_clock=5.0))
    async with team.start() as running:  # (the replicas start before the clock does)
        result = await running.run("hold")
    assert (result.status, result.budget_exhausted) == ("partial", "wall_clock")
    _counted(result, api, _most(caplog, result.run_id))


async def test_a_ray_call_cut_by_its_step_timeout_is_charged_at_its_most(
    ray_session: ModuleType, api: StandIn, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="regiment.run")
    async with Desk(api, probe=False).team(step_timeout=3.0).start() as running:
        result = await running.run("hold")
    assert (result.status, result.committed) == ("completed", ("s3",)), result.events
    _counted(result, api, _most(caplog, result.run_id))
