"""A resumed run counts every reply its journal holds as paid, exactly once, however
early it ends (found by money27).

A resume charged a journaled reply only as it replayed it: a run paused for approval
with two paid replies, approved, resumed as a stream and cancelled at its first event
ended ``cancelled`` counting one (the planner's), though ``cancel_paused`` of the same
run counted both; a resume whose smaller budget stopped it before its step, or that was
cancelled as it replanned, under-counted alike. Now the replies a resume never replays
are charged as the step they belong to reports, and the rest as the run ends: the
result, its journaled end and what ``regiment show`` reads count what the stand-in
models answered (real SQLite files and a real PostgreSQL server, both backends).
"""

from __future__ import annotations

from pathlib import Path

import anyio
import msgspec
import pytest

from regiment import Approve, Budget, Team
from regiment.hierarchy import RunResult
from regiment.journal import EventRecorded, Journal, open_journal
from regiment.models import Usage

from . import paid_replies_team as team_of
from .killed_child import journal_at

pytestmark = pytest.mark.anyio

CASES = [("asyncio", "sqlite"), ("trio", "sqlite"), ("asyncio", "postgres"), ("trio", "postgres")]


async def _paused(
    journal: Journal, answered: team_of.Answered, race: bool, nested: bool = False
) -> str:
    """Run the team to its pause for approval, approve, and give the run's id (the tool
    calls the paused run counted: ``answered.tool_calls``)."""
    team = team_of.make_team(answered, race=race, nested=nested)
    async with team.start(journal=journal) as running:
        paused = await running.run(team_of.GOAL)
        assert paused.status == "paused"
        (pending,) = paused.pending_approvals
        _counts(paused, answered)  # the paused run counts what was answered
        answered.tool_calls = paused.tool_calls
        await running.approve(pending.request_id, Approve())
    return paused.run_id


def _counts(result: RunResult, answered: team_of.Answered) -> None:
    """``result`` counts each reply the stand-ins answered once, plus the calls cut in
    flight at their most (``estimated_usage``, one model call each)."""
    estimated = result.estimated_usage
    cut = 0 if estimated == Usage() else 1
    assert result.model_calls == answered.model_calls + cut
    assert result.usage == answered.usage + estimated


async def _journaled_end(journal: Journal, run_id: str) -> RunResult:
    """The resumed run's end, as its journal has it (what ``regiment show`` reads)."""
    records = [entry.record for entry in await journal.read(run_id)]
    (*_, last) = [r for r in records if isinstance(r, EventRecorded) and r.kind == "RunCompleted"]
    assert isinstance(last, EventRecorded)
    return msgspec.convert(last.event["result"], RunResult)


async def _resume_until(
    journal: Journal, team: Team, run_id: str, stop: str, answered: team_of.Answered
) -> None:
    """Resume run ``run_id`` as a stream and cancel it at its first ``stop`` event (or,
    ``stop`` "in tool", once the refund's body runs)."""
    async with team.start(journal=journal) as running, anyio.create_task_group() as tg:
        with anyio.CancelScope() as scope:

            async def in_tool() -> None:
                await answered.in_tool.wait()
                scope.cancel()

            if stop == "in tool":
                tg.start_soon(in_tool)
            async with running.resume_stream(run_id, force=True) as events:
                async for event in events:
                    if type(event).__name__ == stop:
                        scope.cancel()
        tg.cancel_scope.cancel()


async def _resumed_end(
    where: str,
    answered: team_of.Answered,
    stop: str,
    status: str,
    *,
    race: bool = False,
    nested: bool = False,
) -> RunResult:
    """Run the team (``race``, ``nested``) on the journal at ``where`` to its pause,
    approve, resume it until ``stop`` (``_resume_until``), and check that its journaled
    end, ``status``, counts each reply and tool call once; that end."""
    journal = await open_journal(where)
    try:
        run_id = await _paused(journal, answered, race, nested)
        team = team_of.make_team(
            answered,
            race=race,
            nested=nested,
            hang=stop == "in tool",
            hang_synthesis=stop == "SynthesisStarted",
        )
        await _resume_until(journal, team, run_id, stop, answered)
        ended = await _journaled_end(journal, run_id)
        info = await journal.get_run(run_id)
    finally:
        await journal.close()
    assert (ended.status, info.status) == (status, status)
    _counts(ended, answered)
    # the refund calls asked before the pause, counted once whether the resume got to
    # them or not (one ran again counts once too)
    assert ended.tool_calls == answered.tool_calls
    return ended


@pytest.mark.parametrize(("anyio_backend", "kind"), CASES)
@pytest.mark.parametrize(
    ("stop", "race", "status"),
    [
        ("RunStarted", False, "cancelled"),  # before anything is replayed
        ("in tool", False, "cancelled"),  # inside the approved tool's body
        ("SynthesisStarted", False, "cancelled"),  # the synthesis cut in flight
        ("Replanned", True, "cancelled"),  # as the resume replans away from s1 v1
        ("", True, "completed"),  # to the end: no reply counted twice
    ],
)
async def test_a_resume_counts_each_journaled_reply_once(
    anyio_backend: str,
    kind: str,
    stop: str,
    race: bool,
    status: str,
    tmp_path: Path,
    request: pytest.FixtureRequest,
) -> None:
    answered = team_of.Answered()
    where = journal_at(kind, tmp_path, request)
    ended = await _resumed_end(where, answered, stop, status, race=race)
    if stop == "SynthesisStarted":  # the clerk's second reply, then the synthesis cut
        assert answered.replies[-1][0] == "worker"
        assert ended.estimated_usage.output_tokens > 0
    else:
        assert ended.estimated_usage == Usage()


@pytest.mark.parametrize(("anyio_backend", "kind"), CASES)
async def test_a_resume_its_budget_stops_counts_what_it_never_replayed(
    anyio_backend: str, kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """Resumed (``force``) under ``Budget(model_calls=2)``: the plan's replay spends one,
    the other is kept for the synthesis, so the clerk's step is never sent and the run
    ends ``partial``, counting the clerk's journaled reply all the same."""
    answered = team_of.Answered()
    journal = await open_journal(journal_at(kind, tmp_path, request))
    try:
        run_id = await _paused(journal, answered, race=False)
        team = team_of.make_team(answered, budget=Budget(model_calls=2))
        async with team.start(journal=journal) as running:
            resumed = await running.resume(run_id, force=True)
        ended = await _journaled_end(journal, run_id)
    finally:
        await journal.close()
    assert [role for role, _, _ in answered.replies] == ["planner", "worker"]  # none since
    assert (resumed.status, resumed.budget_exhausted) == ("partial", "model_calls")
    for result in (resumed, ended):
        _counts(result, answered)
        assert result.tool_calls == answered.tool_calls  # (the refund asked, journaled)
        assert result.usage_by_role["clerk"] == team_of.used("worker")


@pytest.mark.parametrize(("anyio_backend", "kind"), CASES)
@pytest.mark.parametrize(
    ("stop", "status"),
    [
        ("RunStarted", "cancelled"),  # before the step goes to the nested team again
        ("in tool", "cancelled"),  # the nested run taken up again, cut in the refund
        ("", "completed"),  # to the end: nothing counted twice
    ],
)
async def test_a_resume_counts_what_its_nested_teams_journaled(
    anyio_backend: str,
    kind: str,
    stop: str,
    status: str,
    tmp_path: Path,
    request: pytest.FixtureRequest,
) -> None:
    """``s1`` goes to a nested team (``desk``) whose clerk's refund pauses the runs: the
    resume counts the nested run's journaled replies and tool call (its planner's, the
    clerk's) to ``desk`` whether or not it sends the step there again, once."""
    answered = team_of.Answered()
    where = journal_at(kind, tmp_path, request)
    ended = await _resumed_end(where, answered, stop, status, nested=True)
    desk = [usage for role, usage, _ in answered.replies if not role.startswith("top ")]
    assert ended.usage_by_role["desk"] == sum(desk, Usage())
