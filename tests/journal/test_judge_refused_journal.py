"""A guard's judge call the model refuses, reporting what the refusal cost
(``ModelRefused(usage=...)``), is journaled as answered: its intent
(``ModelCallStarted``, written under a spending budget) is closed by a
``ModelCallFinished`` whose ``failed`` names the error, so the refusal is charged once,
at what it reported, live and across a resume, and never again as a call in flight.

Before, nothing closed that intent: a resume warned that the calls "were in flight when
its process stopped" and charged each at its most (8,192 output tokens a call), and the
cancel of a stalled run did the same; a step resumed after its judge was refused asked
the model again. Now a resume replays the refusal: the guard gets the same
``ModelRefused`` (its usage, its model calls) and decides as it did live (real SQLite
files and a real PostgreSQL server, a real pause at an approval and a real SIGKILLed
child process).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import anyio
import msgspec
import pytest

from regiment import Approve, Budget
from regiment.hierarchy import RunResult, Team
from regiment.hierarchy.run._journaling import LEASE_TTL
from regiment.journal import EventRecorded, ModelCallFinished, ModelCallStarted, open_journal
from regiment.models import Usage

from . import refusing_judge_team as team_of
from .killed_child import journal_at, killed_child

pytestmark = pytest.mark.anyio

CASES = [("asyncio", "sqlite"), ("trio", "sqlite"), ("asyncio", "postgres"), ("trio", "postgres")]
REFUSED = f"refused, {team_of.REFUSAL_CALLS} calls, {team_of.REFUSAL}"


def _closed(records: Sequence[object]) -> list[ModelCallFinished]:
    """The judge calls' records, after checking every started call was answered."""
    started = {r.call_key for r in records if isinstance(r, ModelCallStarted)}
    finished = {r.call_key: r for r in records if isinstance(r, ModelCallFinished)}
    assert started - finished.keys() == set()  # no call left looking in flight
    return [r for key, r in finished.items() if "/guard/" in key]


async def _approved_and_resumed(
    team: Team, where: str, at_pause: Callable[[RunResult], None] | None = None
) -> tuple[RunResult, RunResult, Sequence[object]]:
    """Runs ``team`` on the journal at ``where`` until it pauses (``at_pause`` checks that
    result), approves its request and resumes it: the paused and resumed results and
    the run's journal records."""
    journal = await open_journal(where)
    try:
        async with team.start(journal=journal) as running:
            paused = await running.run(team_of.GOAL)
            if at_pause is not None:
                at_pause(paused)
            (pending,) = paused.pending_approvals
            await running.approve(pending.request_id, Approve())
            resumed = await running.resume(paused.run_id)
        records = [e.record for e in await journal.read(paused.run_id)]
    finally:
        await journal.close()
    return paused, resumed, records


def _no_call_in_flight(caplog: pytest.LogCaptureFixture) -> None:
    said = [r.getMessage() for r in caplog.records if r.name == "regiment.run"]
    assert not [m for m in said if "in flight" in m], said


@pytest.mark.parametrize(("anyio_backend", "kind"), CASES)
async def test_a_refused_judge_is_charged_once_across_a_resume(
    anyio_backend: str,
    kind: str,
    tmp_path: Path,
    request: pytest.FixtureRequest,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="regiment")
    where = journal_at(kind, tmp_path, request)
    asked: list[str] = []
    verdicts: list[str] = []

    def at_pause(paused: RunResult) -> None:
        assert paused.status == "paused"
        assert asked == ["fine? drafter", "fine? clerk"]

    team = team_of.make_team(asked, verdicts)
    paused, resumed, records = await _approved_and_resumed(team, where, at_pause)
    # The clerk's step ran again: its judge's question was replayed, not asked; its
    # second reply's question (after the refund) is new.
    assert asked == ["fine? drafter", "fine? clerk", "fine? clerk"]
    assert verdicts == [f"drafter: {REFUSED}"] + [f"clerk: {REFUSED}"] * 3
    assert resumed.status == "completed"
    _no_call_in_flight(caplog)
    assert paused.estimated_usage == resumed.estimated_usage == Usage()
    assert resumed.usage_by_role["drafter"] == paused.usage_by_role["drafter"]
    # paused: the plan, the drafter's reply, the clerk's first, two refusals of two
    # calls each; then the clerk's second reply, its refusal, the synthesis
    assert paused.model_calls == 3 + 2 * team_of.REFUSAL_CALLS
    assert resumed.model_calls == paused.model_calls + 2 + team_of.REFUSAL_CALLS
    judged = _closed(records)
    assert len(judged) == 3
    for record in judged:
        assert record.failed == {"error": "ModelRefused", "message": "refused"}
        assert (record.response.usage, record.calls) == (team_of.REFUSAL, team_of.REFUSAL_CALLS)


@pytest.mark.parametrize(("anyio_backend", "kind"), CASES)
async def test_a_stalled_run_cancelled_counts_a_refused_judge_once(
    anyio_backend: str,
    kind: str,
    tmp_path: Path,
    request: pytest.FixtureRequest,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="regiment")
    where = journal_at(kind, tmp_path, request)
    child = Path(team_of.__file__)
    args = [where, anyio_backend]
    async with killed_child(child, args, tmp_path / "child.log", "in tool", 60) as run_id:
        pass
    asked: list[str] = []
    journal = await open_journal(where, clock=lambda: time.time() + LEASE_TTL + 1)
    try:
        async with team_of.make_team(asked, []).start(journal=journal) as running:
            ended = await running.cancel_paused(run_id, reason="its machine died")
        records = [e.record for e in await journal.read(run_id)]
    finally:
        await journal.close()
    assert asked == []  # nothing asked again
    _no_call_in_flight(caplog)
    judged = _closed(records)
    assert len(judged) == 2  # the drafter's, the clerk's
    assert ended is not None
    assert ended.estimated_usage == Usage()
    # the plan, the drafter's reply, the clerk's; two refusals of two calls each
    assert ended.model_calls == 3 + 2 * team_of.REFUSAL_CALLS
    replies = sum((r.response.usage for r in records if isinstance(r, ModelCallFinished)), Usage())
    assert ended.usage == replies
    assert sum((r.response.usage for r in judged), Usage()) == team_of.REFUSAL + team_of.REFUSAL


@pytest.mark.parametrize(("anyio_backend", "kind"), CASES)
async def test_a_plan_guards_refused_judge_is_replayed_on_resume(
    anyio_backend: str,
    kind: str,
    tmp_path: Path,
    request: pytest.FixtureRequest,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="regiment")
    where = journal_at(kind, tmp_path, request)
    asked: list[str] = []
    verdicts: list[str] = []
    team = team_of.make_team(asked, verdicts, plan_guard=True)
    paused, resumed, records = await _approved_and_resumed(team, where)
    # The plan's judge is asked once: the resume replays its refusal to the plan's guard.
    assert asked.count("fine? the plan") == 1
    assert verdicts.count(f"the plan: {REFUSED}") == 2
    assert resumed.status == "completed"
    _no_call_in_flight(caplog)
    assert resumed.estimated_usage == Usage()
    assert resumed.model_calls == paused.model_calls + 2 + team_of.REFUSAL_CALLS
    (planned,) = [r for r in _closed(records) if r.call_key.startswith("run/guard/")]
    assert planned.failed == {"error": "ModelRefused", "message": "refused"}


@pytest.mark.parametrize(("anyio_backend", "kind"), CASES)
async def test_a_refusal_of_an_own_class_is_met_as_such_on_resume(
    anyio_backend: str, kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """The judge refuses with ``Overloaded``, a ``ModelRefused`` of the application's: the
    guards catch it as a ``ModelRefused`` live, and do the same when a resume raises it
    again (it came back a plain ``ModelError`` the guard did not catch: the step failed)."""
    asked: list[str] = []
    verdicts: list[str] = []
    team = team_of.make_team(asked, verdicts, plan_guard=True, own_class=True)
    _, resumed, records = await _approved_and_resumed(team, journal_at(kind, tmp_path, request))
    assert resumed.status == "completed"
    assert verdicts.count(f"the plan: {REFUSED}") == 2  # live, then replayed
    (planned,) = [r for r in _closed(records) if r.call_key.startswith("run/guard/")]
    assert planned.failed == {"error": "ModelRefused", "message": "refused"}
    assert asked.count("fine? the plan") == 1  # replayed, not asked again


@pytest.mark.parametrize(("anyio_backend", "kind"), CASES)
@pytest.mark.parametrize(
    ("usd", "guarded"),
    [
        (None, False),  # the plan guard taken away: its judge's reply never replayed
        (None, True),  # replayed, its chain (or its charge) cut as the run is cancelled
        (1.0, True),  # the same under a spending budget (intents, and the cut's watch)
    ],
)
async def test_a_resume_cancelled_counts_the_plan_judge_once_to_the_planner(
    anyio_backend: str,
    kind: str,
    usd: float | None,
    guarded: bool,
    tmp_path: Path,
    request: pytest.FixtureRequest,
) -> None:
    """A resume cancelled at its first event (forced, with the plan guard taken away, if
    not ``guarded``) counts the plan guard's journaled judge call once, to the planner,
    as live. Not replayed and, with no spending limit, no intent journaled, it was
    charged to ``guardrail``, a role the run never had; replayed, then cut before its
    chain's spending reached the run (asyncio, as a rule), it was not charged at all."""
    journal = await open_journal(journal_at(kind, tmp_path, request))
    budget = Budget(replans=2, usd=usd)  # (no spending limit: no intents)
    try:
        team = team_of.make_team([], [], plan_guard=True, budget=budget)
        async with team.start(journal=journal) as running:
            paused = await running.run(team_of.GOAL)
            (pending,) = paused.pending_approvals
            await running.approve(pending.request_id, Approve())
        resumed = team_of.make_team([], [], plan_guard=guarded, budget=budget)
        async with resumed.start(journal=journal) as running:
            with anyio.CancelScope() as scope:
                async with running.resume_stream(paused.run_id, force=True) as events:
                    async for _ in events:
                        scope.cancel()
        records = [e.record for e in await journal.read(paused.run_id)]
    finally:
        await journal.close()
    intents = [r for r in records if isinstance(r, ModelCallStarted)]
    # A judge's intent is journaled whatever the budget (cut by a crash, it is counted on
    # resume); the planner's and the workers' own calls' only under a spending limit.
    judges = [r for r in intents if r.call_key.startswith("run/") or "/a1/" in r.call_key]
    assert judges
    assert (len(intents) > len(judges)) == (usd is not None)
    (*_, last) = [r for r in records if isinstance(r, EventRecorded) and r.kind == "RunCompleted"]
    ended = msgspec.convert(last.event["result"], RunResult)
    assert ended.status == "cancelled"
    assert ended.usage_by_role == paused.usage_by_role
    assert ended.model_calls == paused.model_calls
