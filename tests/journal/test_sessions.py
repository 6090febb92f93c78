"""A follow-up goal in the same session sees the session's earlier runs in the planner's context."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from regiment import ScriptedModel
from regiment.hierarchy import Compression

from .durable_team import Ledger, make_team

pytestmark = pytest.mark.anyio


def _first_plan_request(model: ScriptedModel, goal: str) -> str:
    texts = [r.messages[0].text for r in model.requests if r.role == "planner"]
    [asked] = [t for t in texts if t.startswith(f"Goal: {goal}\n") or t == f"Goal: {goal}"]
    return asked


@pytest.mark.parametrize("journaled", [True, False], ids=["journal", "memory"])
async def test_a_follow_up_sees_earlier_goals_answers_and_committed_steps(
    tmp_path: Path, journaled: bool
) -> None:
    # Without a journal the started team remembers its sessions' runs in memory.
    team = make_team()
    model = team.planner.model
    assert isinstance(model, ScriptedModel)
    async with team.start(journal=tmp_path / "runs.db" if journaled else None) as running:
        first = await running.run("settle acme", session="ticket-4411", deps=Ledger(tmp_path))
        await running.run("settle other things", session="ticket-9", deps=Ledger(tmp_path))
        await running.run("now the follow-up", session="ticket-4411", deps=Ledger(tmp_path))
    asked = _first_plan_request(model, "now the follow-up")
    assert "Earlier runs in session 'ticket-4411'" in asked
    assert "Goal: settle acme" in asked
    assert f"Answer: {' '.join(first.answer.split())[:100]}" in asked
    assert "Step s1 (billing): s1: charged 10 to acme" in asked
    assert "Step s4 (billing): s4: charged 7 to omni" in asked
    assert "settle other things" not in asked  # another session
    lonely = _first_plan_request(model, "settle acme")
    assert "Earlier runs" not in lonely  # the first run of a session has no history


async def test_the_history_keeps_the_newest_runs_within_the_context_budget(tmp_path: Path) -> None:
    team = dataclasses.replace(make_team(), compression=Compression(threshold_tokens=300))
    model = team.planner.model
    assert isinstance(model, ScriptedModel)
    async with team.start(journal=tmp_path / "runs.db") as running:
        for n in range(4):
            await running.run(f"round number {n}", session="s", deps=Ledger(tmp_path))
        await running.run("the last one", session="s", deps=Ledger(tmp_path))
    asked = _first_plan_request(model, "the last one")
    assert "Goal: round number 3" in asked  # the newest kept
    assert "Goal: round number 0" not in asked  # the oldest left out, and said so
    assert "older runs left out to fit the context" in asked
    history = asked.split("Earlier runs", 1)[1]
    assert len(history) <= 300 * 4 + 200


async def test_without_a_journal_a_session_keeps_only_the_runs_its_context_can_show(
    tmp_path: Path,
) -> None:
    # Memory stays bounded however long a session goes on: the newest runs that fit.
    team = dataclasses.replace(make_team(), compression=Compression(threshold_tokens=300))
    model = team.planner.model
    assert isinstance(model, ScriptedModel)
    async with team.start() as running:
        for n in range(12):
            await running.run(f"round number {n}", session="s", deps=Ledger(tmp_path))
        kept = running.sessions.history("s", exclude="")
        await running.run("the last one", session="s", deps=Ledger(tmp_path))
    assert 1 <= len(kept) < 12
    assert kept[-1].goal == "round number 11"
    asked = _first_plan_request(model, "the last one")
    assert "Goal: round number 11" in asked
    assert "Goal: round number 0" not in asked
    assert len(asked.split("Earlier runs", 1)[1]) <= 300 * 4 + 200


async def test_without_a_journal_a_long_goal_is_kept_only_as_far_as_the_context_shows_it(
    tmp_path: Path,
) -> None:
    # 1,000 sessions of one 1 MiB goal each must not hold 1 GB: a goal is kept cut to the
    # session context's size, and the planner is shown the same text as before.
    team = dataclasses.replace(make_team(), compression=Compression(threshold_tokens=300))
    model = team.planner.model
    assert isinstance(model, ScriptedModel)
    long_goal = "settle acme " + "and again " * 20_000
    async with team.start() as running:
        await running.run(long_goal, session="s", deps=Ledger(tmp_path))
        (kept,) = running.sessions.history("s", exclude="")
        await running.run("the last one", session="s", deps=Ledger(tmp_path))
    assert kept.goal == long_goal[: 300 * 4]
    history = _first_plan_request(model, "the last one").split("Earlier runs", 1)[1]
    assert f"- Goal: {long_goal[: 300 * 4 - len('- Goal: ')]}" in history
    assert len(history) <= 300 * 4 + 200
