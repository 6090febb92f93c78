"""A nested team's call cut in flight is an estimate in the top run's result too.

A step served by a ``TeamWorker`` carries what its nested run spent, the nested run's
cut calls (charged at their most) included, so the top run's ``usage`` counted them;
but its ``estimated_usage`` (and a ``RunFailed``'s) did not say that part was an
estimate. The step's report now carries the nested run's estimate
(``StepReport.estimated``), and the run above adds it up with its own, once, also on
a resume (the journaled report carries it).

The nested team's worker is the Anthropic SDK against a stand-in Messages API that
holds its call (it never answers); the top run cuts it by a replan, or by its cancel.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from regiment.hierarchy import (
    Budget,
    Check,
    Planner,
    RunCompleted,
    RunResult,
    Team,
    TeamWorker,
    Worker,
)
from regiment.hierarchy._replay import Replay
from regiment.journal import open_journal
from regiment.models import ModelRequest, ScriptedModel

from ..models.standin import StandIn
from .held_call import FREE, USD, api, held_model, until_held

pytestmark = pytest.mark.anyio

__all__ = ("api",)  # the fixture: a stand-in that holds its first call


class Nest:
    """Top v1: ``s1`` on the nested team ``sub`` (its one step on the held worker) and,
    unless ``probe`` is off, ``s2``, a probe whose check fails once that call is held
    (the top replans, cutting ``s1``); v2: ``s3``; then an answer."""

    def __init__(self, api: StandIn, *, probe: bool = True) -> None:
        self.api, self.probe = api, probe

    async def brain(self, request: ModelRequest) -> str:
        text = request.messages[0].text
        if request.role == "planner" and "nested goal" in text:
            return json.dumps({"steps": [{"id": "c1", "description": "hold", "worker": "slow"}]})
        if request.role == "planner":
            steps = [{"id": "s1", "description": "nested goal", "worker": "sub"}]
            if self.probe:
                steps.append({"id": "s2", "description": "probe", "worker": "quick", "check": "no"})
            return json.dumps({"steps": steps})
        if request.role == "replanner":
            return json.dumps({"steps": [{"id": "s3", "description": "wrap", "worker": "quick"}]})
        if request.role == "worker" and "probe" in text:
            await self.held()
            return "the probe failed"
        return "done"

    async def held(self) -> None:
        """Until the stand-in holds the nested worker's call."""
        await until_held(self.api)

    def team(self) -> Team:
        slow = held_model(self.api.base_url)
        scripted = ScriptedModel(self.brain, price=FREE)
        sub = Team(
            name="sub",
            planner=Planner(model=scripted),
            workers=[Worker(name="slow", description="holds", model=slow)],
        )
        return Team(
            name="top",
            planner=Planner(model=scripted),
            workers=[
                TeamWorker(name="sub", description="a nested team", team=sub),
                Worker(name="quick", description="answers", model=scripted),
            ],
            checks={"no": Check(description="never passes", predicate=lambda r: False)},
            budget=Budget(usd=USD),
        )


def _estimated(result: RunResult) -> None:
    """The nested cut call, in the top run's usage, is its estimate: its max_tokens as
    output, its cost at its most (the scripted roles cost nothing)."""
    spent = result.usage_by_role["sub"]
    assert spent.micro_usd > 0  # the nested run's cut call, charged at its most
    assert result.estimated_usage.output_tokens == 200
    assert result.estimated_usage.micro_usd == spent.micro_usd == result.usage.micro_usd
    assert result.as_failed("RunError", "boom").estimated_usage == result.estimated_usage


async def test_a_nested_call_cut_by_the_top_runs_replan_is_in_its_estimate(
    api: StandIn, tmp_path: Path
) -> None:
    nest = Nest(api)
    journal = await open_journal(str(tmp_path / "runs.db"))
    try:
        async with nest.team().start(journal=journal) as running:
            result = await running.run("probe and wrap")
        entries = await journal.read(result.run_id)
    finally:
        await journal.close()
    assert (result.status, result.committed) == ("completed", ("s3",)), result.events
    assert len(api.requests) == 1
    _estimated(result)
    # The top run's journal keeps s1's dropped report with its estimate: a resume
    # replays that report, and counts the estimate once, from it.
    replay = Replay.of(entries)
    kept = replay.uncommitted[(1, "s1")]
    assert kept["estimated"]["micro_usd"] == result.estimated_usage.micro_usd  # type: ignore[index]
    assert not replay.unanswered()  # the cut call's intent is the nested run's own


async def test_a_nested_call_cut_by_the_top_runs_cancel_is_in_its_estimate(
    api: StandIn,
) -> None:
    nest = Nest(api, probe=False)
    async with nest.team().start() as running:
        async with running.stream("probe and wrap") as events:
            async for _ in events:
                await nest.held()
                break  # leaving the block cancels the run
        ending = events.ending
    assert isinstance(ending, RunCompleted)
    assert ending.result.status == "cancelled"
    _estimated(ending.result)
