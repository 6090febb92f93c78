"""A worker's own model call that the model refuses, reporting what the refusal cost
(``ModelRefused(usage=...)``), is journaled as answered, as a guard's judge call is
(test_judge_refused_journal.py): its intent (``ModelCallStarted``, written under a
spending budget) is closed by a ``ModelCallFinished`` whose ``failed`` names the error.

Before, nothing closed that intent: a resume warned that the call "was in flight when its
process stopped", charged it at its most (4,096 output tokens; $0.004184 for $0.000011)
and asked the refusing model again; the cancel of a stalled run charged it at its most
too. Now a resume replays the refusal: the step fails as it did, charged what the refusal
reported, and the model is not asked (real SQLite files and a real PostgreSQL server, a
real pause at an approval and a real SIGKILLed child process).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from pathlib import Path

import msgspec
import pytest

from regiment import Approve
from regiment.hierarchy import RunResult
from regiment.hierarchy.run._journaling import LEASE_TTL
from regiment.journal import ModelCallFinished, ModelCallStarted, open_journal
from regiment.models import Usage

from . import refusing_worker_team as team_of
from .killed_child import journal_at, killed_child

pytestmark = pytest.mark.anyio

CASES = [("asyncio", "sqlite"), ("trio", "sqlite"), ("asyncio", "postgres"), ("trio", "postgres")]
REFUSED = {"error": "ModelRefused", "message": "refused"}


def _refused(records: Sequence[object]) -> ModelCallFinished:
    """The drafter's refused call's record, after checking every started call was
    answered (and that call journaled once)."""
    started = {r.call_key for r in records if isinstance(r, ModelCallStarted)}
    finished = {r.call_key: r for r in records if isinstance(r, ModelCallFinished)}
    assert started - finished.keys() == set()  # no call left looking in flight
    (record,) = [r for r in records if isinstance(r, ModelCallFinished) and r.failed]
    assert record.call_key == "step/1/s1/1"
    assert record.failed == REFUSED
    assert (record.response.usage, record.calls) == (team_of.REFUSAL, team_of.REFUSAL_CALLS)
    return record


def _no_call_in_flight(caplog: pytest.LogCaptureFixture) -> None:
    said = [r.getMessage() for r in caplog.records if r.name == "regiment.run"]
    assert not [m for m in said if "in flight" in m], said


def _charged_once(result: RunResult) -> None:
    assert result.estimated_usage == Usage()
    assert result.usage_by_role["drafter"] == team_of.REFUSAL
    (failed,) = [s for s in result.steps if s.step_id == "s1"]
    assert (failed.status, failed.error_type) == ("failed", "regiment.errors.ModelRefused")


@pytest.mark.parametrize(("anyio_backend", "kind"), CASES)
async def test_a_refused_worker_call_is_replayed_across_a_pause(
    anyio_backend: str,
    kind: str,
    tmp_path: Path,
    request: pytest.FixtureRequest,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="regiment")
    asked: list[str] = []
    journal = await open_journal(journal_at(kind, tmp_path, request))
    try:
        async with team_of.make_team(asked).start(journal=journal) as running:
            paused = await running.run(team_of.GOAL)
            assert paused.status == "paused"
            assert asked == ["planner", "drafter", "replanner", "worker"]
            (pending,) = paused.pending_approvals
            await running.approve(pending.request_id, Approve())
            resumed = await running.resume(paused.run_id)
        records = [e.record for e in await journal.read(paused.run_id)]
    finally:
        await journal.close()
    # The refusal is replayed: the drafter's model is not asked again.
    assert asked == ["planner", "drafter", "replanner", "worker", "worker", "synthesizer"]
    assert resumed.status == "completed"
    _no_call_in_flight(caplog)
    _charged_once(paused)
    _charged_once(resumed)
    # the plan, the refusal (two calls), the replan, the clerk's first reply; then its
    # second and the synthesis
    assert paused.model_calls == 3 + team_of.REFUSAL_CALLS
    assert resumed.model_calls == paused.model_calls + 2
    _refused(records)


async def _killed(where: str, backend: str, tmp_path: Path) -> str:
    """The id of the child's run, SIGKILLed in its clerk's tool, after the refusal."""
    child = Path(team_of.__file__)
    async with killed_child(child, [where, backend], tmp_path / "child.log", "in tool", 60) as ran:
        pass
    return ran


@pytest.mark.parametrize(("anyio_backend", "kind"), CASES)
async def test_a_refused_worker_call_is_replayed_after_a_crash(
    anyio_backend: str,
    kind: str,
    tmp_path: Path,
    request: pytest.FixtureRequest,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="regiment")
    where = journal_at(kind, tmp_path, request)
    run_id = await _killed(where, anyio_backend, tmp_path)
    asked: list[str] = []
    journal = await open_journal(where, clock=lambda: time.time() + LEASE_TTL + 1)
    try:
        async with team_of.make_team(asked, approval=False).start(journal=journal) as running:
            resumed = await running.resume(run_id)
        records = [e.record for e in await journal.read(run_id)]
    finally:
        await journal.close()
    assert asked == ["worker", "synthesizer"]  # the rest replayed; the drafter not asked
    assert resumed.status == "completed"
    _no_call_in_flight(caplog)
    _charged_once(resumed)
    assert resumed.model_calls == 3 + team_of.REFUSAL_CALLS + 2
    _refused(records)


@pytest.mark.parametrize(("anyio_backend", "kind"), CASES)
async def test_a_stalled_run_cancelled_counts_a_refused_worker_call_once(
    anyio_backend: str,
    kind: str,
    tmp_path: Path,
    request: pytest.FixtureRequest,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="regiment")
    where = journal_at(kind, tmp_path, request)
    run_id = await _killed(where, anyio_backend, tmp_path)
    asked: list[str] = []
    journal = await open_journal(where, clock=lambda: time.time() + LEASE_TTL + 1)
    try:
        async with team_of.make_team(asked).start(journal=journal) as running:
            ended = await running.cancel_paused(run_id, reason="its machine died")
        records = [e.record for e in await journal.read(run_id)]
    finally:
        await journal.close()
    assert asked == []  # nothing asked again
    _no_call_in_flight(caplog)
    assert ended is not None
    assert ended.estimated_usage == Usage()
    assert ended.model_calls == 3 + team_of.REFUSAL_CALLS
    replies = sum((r.response.usage for r in records if isinstance(r, ModelCallFinished)), Usage())
    assert ended.usage == replies
    assert _refused(records).response.usage == team_of.REFUSAL


def test_a_journaled_api_error_is_raised_again_as_it_was() -> None:
    """What decides a failed step's fate (an error no replan fixes: ``permanent``) and
    its status code come back on a resume, through the journal's own encoding."""
    from regiment.errors import ModelAPIError
    from regiment.hierarchy.guard._tape import failure, raised_again
    from regiment.journal import Record

    exc = ModelAPIError("bad key", status_code=401)
    exc.usage, exc.model_calls, exc.usage_estimated = Usage(input_tokens=5), 1, True
    response, calls, failed = failure(exc)
    record = ModelCallFinished(run_id="r", call_key="step/1/s1/1", response=response)
    record = msgspec.structs.replace(record, calls=calls, failed=failed)
    read = msgspec.json.decode(msgspec.json.encode(record), type=Record)
    assert isinstance(read, ModelCallFinished)
    assert read.failed is not None
    again = raised_again(read.response, read.calls, read.failed)
    assert isinstance(again, ModelAPIError)
    assert (again.status_code, again.permanent, str(again)) == (401, True, "bad key")
    assert (again.usage, again.model_calls, again.usage_estimated) == (exc.usage, 1, True)
    # an older journal's record (no status): what its kind says, nothing more
    older = raised_again(read.response, 0, {"error": "ModelAPIError", "message": "bad key"})
    assert isinstance(older, ModelAPIError)
    assert (older.status_code, older.permanent, older.usage) == (None, False, None)
