"""A model call cut in flight in the run's own process is charged, as the provider bills it.

A worker's call sent to the provider and then cut before its usage came back (its step
cut by a replan, or the run cancelled) was not counted at all in the live run, though the
provider may bill it: only a crash resume, or a lost Ray replica, counted such a call.
Now the run charges it at the most it could have spent (its estimated input, its held
``max_tokens``, their cost: the journaled intent's ``most``), to the step's worker, with one
INFO line on ``regiment.run`` saying so, and ``RunResult.estimated_usage`` says how much
of ``usage`` is that estimate. A journaled run keeps the call unanswered (the step's
dropped report does not carry it), so a later resume counts it once, from the journal.

The worker's model is the Anthropic SDK against a stand-in Messages API that holds the
call (it never answers it); it bills each request it gets at least the usage it reports
for an answered one.
"""

from __future__ import annotations

import json
import logging
import re
from pathlib import Path

import pytest

from regiment.hierarchy import Budget, Check, Planner, RunCompleted, RunResult, Team, Worker
from regiment.hierarchy._replay import Replay
from regiment.journal import open_journal
from regiment.models import (
    ModelRequest,
    ScriptedModel,
    Usage,
    priced,
)

from ..models.standin import StandIn
from .held_call import CLAUDE, FREE, USD, api, held_model, until_held

pytestmark = pytest.mark.anyio

__all__ = ("api",)  # the fixture: a stand-in that holds its first call

# What the stand-in bills a request, at the least: the usage an answered one reports.
BILLED = priced(Usage(input_tokens=11, output_tokens=7), CLAUDE).micro_usd


class Desk:
    """v1: ``s1`` on the held worker and ``s2``, a probe whose check fails once ``s1``'s
    call is held, so the planner replans (cutting ``s1``); v2: ``s3``; then an answer."""

    def __init__(self, api: StandIn, *, probe: bool = True) -> None:
        self.api = api
        self.probe = probe  # else v1 is ``s1`` alone

    async def brain(self, request: ModelRequest) -> str:
        if request.role == "planner":
            steps = [{"id": "s1", "description": "hold", "worker": "slow"}]
            if self.probe:
                steps.append({"id": "s2", "description": "probe", "worker": "quick", "check": "no"})
            return json.dumps({"steps": steps})
        if request.role == "replanner":
            return json.dumps({"steps": [{"id": "s3", "description": "wrap", "worker": "quick"}]})
        if request.role == "worker" and "probe" in request.messages[0].text:
            await self.held()
            return "the probe failed"
        return "done"

    async def held(self) -> None:
        """Until the stand-in holds ``s1``'s call."""
        await until_held(self.api)

    def team(self, *, stream: bool = False) -> Team:
        slow = held_model(self.api.base_url, stream=stream)
        scripted = ScriptedModel(self.brain, price=FREE)
        return Team(
            name="desk",
            planner=Planner(model=scripted),
            workers=[
                Worker(name="slow", description="holds", model=slow),
                Worker(name="quick", description="answers", model=scripted),
            ],
            checks={"no": Check(description="never passes", predicate=lambda r: False)},
            budget=Budget(usd=USD),
        )


def _most(caplog: pytest.LogCaptureFixture) -> int:
    """What the one INFO line about the cut call says it was charged, in micro-dollars."""
    (said,) = [r.getMessage() for r in caplog.records if "cut in flight" in r.getMessage()]
    assert "run run-" in said
    assert "worker 'slow', step s1: its model call step/1/s1/1 was cut in flight" in said
    return int(float(re.findall(r"\$(\d+\.\d+)", said)[0]) * 1_000_000 + 0.5)


def _counted(result: RunResult, api: StandIn, most: int) -> None:
    """The cut call is counted (at its most, an estimate), never less than billed, and
    within the budget."""
    assert len(api.requests) == 1  # the held call: the only one the provider got
    spent = result.usage_by_role["slow"]
    assert spent.micro_usd == most >= BILLED * len(api.requests)
    assert result.estimated_usage.micro_usd == most
    assert result.estimated_usage.output_tokens == 200  # its max_tokens: the most it could write
    assert result.usage.micro_usd <= USD * 1_000_000


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
async def test_a_call_cut_by_a_replan_is_charged_at_its_most(
    api: StandIn, caplog: pytest.LogCaptureFixture, stream: bool, tmp_path: Path
) -> None:
    caplog.set_level(logging.INFO, logger="regiment.run")
    desk = Desk(api)
    journal = await open_journal(str(tmp_path / "runs.db"))
    try:
        async with desk.team(stream=stream).start(journal=journal) as running:
            result = await running.run("probe and wrap")
        entries = await journal.read(result.run_id)
    finally:
        await journal.close()
    assert (result.status, result.committed) == ("completed", ("s3",)), result.events
    most = _most(caplog)
    _counted(result, api, most)
    assert result.model_calls == 6  # plan, s1's cut call, s2, replan, s3, synthesis
    # A later resume counts it once, from the journal: its intent has no reply, and the
    # step's dropped report carries none of it.
    replay = Replay.of(entries)
    (lost,) = replay.unanswered()
    assert (lost.call_key, lost.role, lost.most.micro_usd) == ("step/1/s1/1", "slow", most)
    assert replay.uncommitted[(1, "s1")]["usage"]["micro_usd"] == 0  # type: ignore[index]


async def test_a_cut_call_of_a_run_with_no_journal_and_no_stream_is_charged(
    api: StandIn, caplog: pytest.LogCaptureFixture
) -> None:
    """A step with nothing to replay, journal or stream takes a shorter way to its model
    (no call log of its own, #22): under a budget it still keeps its calls in flight."""
    caplog.set_level(logging.INFO, logger="regiment.run")
    desk = Desk(api)
    async with desk.team().start() as running:
        result = await running.run("probe and wrap")
    assert (result.status, result.committed) == ("completed", ("s3",)), result.events
    _counted(result, api, _most(caplog))


async def test_a_call_cut_by_the_runs_cancel_is_charged_at_its_most(
    api: StandIn, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="regiment.run")
    desk = Desk(api, probe=False)
    async with desk.team().start() as running:
        async with running.stream("probe and wrap") as events:
            async for _ in events:
                await desk.held()
                break  # leaving the block cancels the run
        ending = events.ending
    assert isinstance(ending, RunCompleted)
    assert ending.result.status == "cancelled"
    _counted(ending.result, api, _most(caplog))


def _writer(api: StandIn, budget: Budget) -> Team:
    """One scripted step; the synthesis is the stand-in's held call."""

    def brain(request: ModelRequest) -> str:
        if request.role == "planner":
            return json.dumps({"steps": [{"id": "s1", "description": "draft"}]})
        return "drafted"

    scripted = ScriptedModel(brain, price=FREE)
    held = held_model(api.base_url)
    return Team(
        name="writer",
        planner=Planner(model=scripted, synthesizer_model=held),
        workers=[Worker(name="w", description="drafts", model=scripted)],
        budget=budget,
    )


def _synthesis_counted(result: RunResult, api: StandIn, caplog: pytest.LogCaptureFixture) -> None:
    (said,) = [r.getMessage() for r in caplog.records if "cut in flight" in r.getMessage()]
    assert f"run {result.run_id}: synthesizer: its model call synthesis was cut" in said
    most = int(float(re.findall(r"\$(\d+\.\d+)", said)[0]) * 1_000_000 + 0.5)
    assert len(api.requests) == 1  # the synthesis: the only call the provider got
    assert result.usage_by_role["synthesizer"].micro_usd == most >= BILLED
    assert result.estimated_usage.micro_usd == result.usage.micro_usd == most
    assert result.usage.micro_usd <= USD * 1_000_000


async def test_a_synthesis_cut_by_the_runs_cancel_is_charged_at_its_most(
    api: StandIn, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="regiment.run")
    desk = Desk(api, probe=False)  # only for its wait on the stand-in's held call
    async with _writer(api, Budget(usd=USD)).start() as running:
        async with running.stream("draft") as events:
            async for _ in events:
                await desk.held()
                break  # leaving the block cancels the run
        ending = events.ending
    assert isinstance(ending, RunCompleted)
    assert ending.result.status == "cancelled"
    _synthesis_counted(ending.result, api, caplog)


async def test_a_synthesis_cut_by_the_wall_clock_is_charged_at_its_most(
    api: StandIn, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="regiment.run")
    result = await _writer(api, Budget(usd=USD, wall_clock=2.0)).run("draft")
    assert (result.status, result.budget_exhausted) == ("partial", "wall_clock")
    _synthesis_counted(result, api, caplog)
