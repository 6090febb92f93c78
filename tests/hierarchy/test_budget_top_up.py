"""Top-ups: a step whose share runs short draws on what its run has left (what its
siblings gave back, less what the steps still to come and the synthesis need)
before it gives up."""

from __future__ import annotations

import logging
from pathlib import Path

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from regiment.hierarchy import (
    Budget,
    BudgetExhausted,
    BudgetToppedUp,
    Planner,
    RunResult,
    Team,
    Worker,
)
from regiment.hierarchy._budget import BudgetLedger, Share
from regiment.hierarchy._top_up import TopUps
from regiment.hierarchy.workers._team_worker import TeamWorker
from regiment.journal import EventRecorded, MemoryJournal
from regiment.models import ScriptedModel, Usage
from regiment.tools import Approve

from .brains import Brain, plan_json
from .test_budget_fan_out import Probe, _refused

# One long step (five tool calls: about half of what the run spends) beside seven that
# answer at once, so three times what the run needs is less than the long step's even
# share of it; its tool bodies wait until the seven have been committed, as a real
# model's calls take longer than a step that answers at once.
_SHORT = 7
_LONG_BESIDE_SHORT: list[tuple[int, list[int]]] = [(5, []), *[(0, [])] * _SHORT]


def _waiting_probe() -> Probe:
    return Probe(_LONG_BESIDE_SHORT, hold=anyio.Event(), reported=_SHORT)


async def _unlimited_tokens() -> int:
    probe = _waiting_probe()
    return (await probe.stream(probe.team(Budget()))).usage.total_tokens


def _top_ups(result: RunResult) -> list[BudgetToppedUp]:
    return [e for e in result.events if isinstance(e, BudgetToppedUp)]


@pytest.mark.anyio
async def test_a_long_step_beside_short_ones_completes_on_three_times_what_it_needs(
    caplog: pytest.LogCaptureFixture,
) -> None:
    need = await _unlimited_tokens()
    probe = _waiting_probe()
    with caplog.at_level(logging.INFO, logger="regiment.run"):
        result = await probe.stream(probe.team(Budget(tokens=3 * need)))
    assert (result.status, result.budget_exhausted) == ("completed", None)
    assert probe.bodies == 5
    assert result.usage.total_tokens <= 3 * need
    (topped,) = _top_ups(result)  # one top-up paid for the rest of the loop
    assert topped.step_id == "s1"
    assert topped.granted.tokens is not None
    assert topped.granted.tokens > 0
    assert "step s1: topped up by" in caplog.text
    # the synthesis still got its call: the answer is the synthesizer's
    assert result.usage_by_role["synthesizer"].total_tokens > 0
    assert result.answer == probe.brain.synthesis


@pytest.mark.anyio
async def test_a_long_step_gets_the_tool_calls_its_siblings_left() -> None:
    probe = _waiting_probe()
    result = await probe.stream(probe.team(Budget(tool_calls=15)))  # shares of 1 or 2
    assert (result.status, probe.bodies, _refused(result)) == ("completed", 5, 0)
    assert not [e for e in result.events if isinstance(e, BudgetExhausted)]
    assert [e.step_id for e in _top_ups(result)] == ["s1"]


@pytest.mark.anyio
async def test_a_run_whose_budget_is_really_too_small_still_ends_partial() -> None:
    need = await _unlimited_tokens()
    probe = Probe(_LONG_BESIDE_SHORT, hold=anyio.Event())
    probe.hold.set()  # type: ignore[union-attr]  # (tools yield; no step waits for another)
    result = await probe.team(Budget(tokens=need // 2)).run("goal")
    assert (result.status, result.budget_exhausted) == ("partial", "tokens")
    assert "budget_exhausted" in {r.status for r in result.steps}
    (ended,) = [e for e in result.events if isinstance(e, BudgetExhausted)]
    assert (ended.limit, ended.step_id) == ("tokens", None)
    bound = need // 2 + (len(_LONG_BESIDE_SHORT) + 1) * probe.largest_reply()
    assert result.usage.total_tokens <= bound


@pytest.mark.anyio
async def test_a_top_up_is_journaled_with_the_run() -> None:
    need = await _unlimited_tokens()
    probe = _waiting_probe()
    journal = MemoryJournal()
    result = await probe.stream(probe.team(Budget(tokens=3 * need)), journal)
    entries = await journal.read(result.run_id)
    kinds = [e.record.kind for e in entries if isinstance(e.record, EventRecorded)]
    assert kinds.count("BudgetToppedUp") == 1
    await journal.close()


@pytest.mark.anyio
async def test_a_run_paused_after_a_top_up_resumes_and_completes(tmp_path: Path) -> None:
    # The long step's last call waits for an approval, after its top-up: the run pauses.
    # Its share is not journaled: the resumed run works it out again from what its journal
    # says was spent, replays the step's calls and tops it up again, and completes.
    need = await _unlimited_tokens()
    probe, path = _waiting_probe(), tmp_path / "runs.db"
    team = probe.team(Budget(tokens=3 * need), ask_at=4)
    paused = await probe.stream(team, path)
    assert paused.status == "paused"
    assert [e.step_id for e in _top_ups(paused)] == ["s1"]
    async with team.start(journal=path) as running:
        (asked,) = await running.pending_approvals(paused.run_id)
        await running.approve(asked.request_id, Approve(), by="ana")
        done = await running.resume(paused.run_id)
    assert (done.status, done.budget_exhausted) == ("completed", None)
    assert probe.bodies == 5  # each call's body ran once
    assert done.usage.total_tokens <= 3 * need
    assert "s1" in [e.step_id for e in _top_ups(done)]


def test_a_top_up_leaves_the_steps_still_to_come_and_the_synthesis_their_parts() -> None:
    ledger = BudgetLedger(Budget(tokens=1_200, tool_calls=12))
    for step, share in enumerate(ledger.split(4)):
        ledger.reserve(step, model_calls_cap=6, share=share)
    top_ups = TopUps()
    top_ups.ledger = ledger
    assert top_ups.grant(0, {"tokens": (1, 1)}) is None  # the others hold the rest
    for sibling in (1, 2, 3):  # each spent 100 tokens and gave back the rest
        ledger.release(sibling)
        ledger.spent.charge(f"w{sibling}", Usage(input_tokens=100))
    # 900 unspent, 300 of it held by step 0: it may draw what leaves the synthesis an
    # even part of what is unspent (450); the tool calls have no synthesis to keep for
    grown = top_ups.grant(0, {"tokens": (10, 10), "tool_calls": (1, 1)})
    assert grown is not None
    assert (grown.tokens, grown.tool_calls) == (450, 12)
    top_ups.unsent = lambda: 2  # two steps still to be sent: each keeps an even part
    ledger.release(0)
    ledger.reserve(0, model_calls_cap=6, share=Share(3, 300))
    assert top_ups.grant(0, {"tokens": (200, 200)}) is None  # 600 free, 600 kept back
    grown = top_ups.grant(0, {"tool_calls": (1, 1)})
    assert grown is not None
    assert grown.tool_calls == 3 + 1  # 9 free, 2 x (12 // 3) kept


def _steps_strategy() -> st.SearchStrategy[list[tuple[int, list[int]]]]:
    return st.lists(
        st.tuples(st.integers(0, 4), st.lists(st.integers(1, 6), max_size=2)),
        min_size=1,
        max_size=6,
    ).map(
        lambda steps: [
            (w, sorted({d for d in deps if d <= i})) for i, (w, deps) in enumerate(steps)
        ]
    )


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
@settings(max_examples=25, deadline=None)
@given(steps=_steps_strategy(), tool_calls=st.integers(0, 16), concurrency=st.integers(1, 6))
def test_tool_calls_never_overshoot_with_top_ups(
    backend: str, steps: list[tuple[int, list[int]]], tool_calls: int, concurrency: int
) -> None:
    # The tool bodies wait for a set event: each yields, so steps interleave and the
    # long ones ask for top-ups while others run and report.
    probe = Probe(steps, hold=anyio.Event())
    probe.hold.set()  # type: ignore[union-attr]
    team = probe.team(Budget(tool_calls=tool_calls), concurrency=concurrency)
    result = anyio.run(team.run, "goal", backend=backend)
    assert probe.bodies <= tool_calls
    assert result.tool_calls == probe.bodies
    for topped in _top_ups(result):
        assert topped.granted.tool_calls is not None
        assert topped.granted.tool_calls >= 1
        assert topped.allowance.tool_calls is not None
        assert topped.allowance.tool_calls <= tool_calls
    if tool_calls >= len(steps) * max(w for w, _ in steps):  # even shares suffice
        assert (result.status, _refused(result)) == ("completed", 0)


def _nested(budget: Budget) -> tuple[Team, Probe]:
    """A parent whose step s1 goes to a nested team that runs the long step, beside
    short steps of its own; the long step's tools wait for those."""
    child = Probe([(5, [])], hold=anyio.Event(), reported=_SHORT)
    steps = [{"description": "dig", "worker": "research"}]
    steps += [{"description": f"note {i}", "worker": "w"} for i in range(_SHORT)]
    model = ScriptedModel(Brain([plan_json(*steps)]))
    workers: list[Worker | TeamWorker] = [
        TeamWorker(name="research", description="digs", team=child.team(Budget())),
        Worker(name="w", description="notes", model=model),
    ]
    team = Team(name="parent", planner=Planner(model=model), workers=workers, budget=budget)
    return team, child


@pytest.mark.anyio
async def test_a_nested_team_draws_through_the_step_it_serves() -> None:
    team, child = _nested(Budget())
    need = (await child.stream(team)).usage.total_tokens
    team, child = _nested(Budget(tokens=3 * need))
    result = await child.stream(team)
    assert (result.status, result.budget_exhausted) == ("completed", None)
    assert child.bodies == 5
    assert result.usage.total_tokens <= 3 * need
    assert [e.step_id for e in _top_ups(result)] == ["s1"]  # the parent's step, for its run
    (report,) = [r for r in result.steps if r.step_id == "s1"]
    assert report.status == "done"
