"""A request found by its id alone, in any run of the journal (not only among the pending
ones and the newest 100 runs): a decided request of an older run is "already decided",
not "unknown", in code and over the service's ``POST /approvals/{request_id}``."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import httpx2 as httpx
import msgspec
import pytest

from examples.service.serving import serving
from regiment.errors import ApprovalError
from regiment.journal import (
    ApprovalDecided,
    ApprovalRequested,
    Journal,
    RunFinished,
    SqliteJournal,
    find_approval,
    open_journal,
)
from regiment.serve import create_app
from regiment.tools import Approve, Deny

from .durable_team import make_team
from .records import approval, created, new_id

pytestmark = pytest.mark.anyio

TTL = 30.0
NEWER = 105  # runs started after the request's: more than the newest 100 once searched


def _asked(run_id: str, approval_id: str) -> ApprovalRequested:
    """A request as a run journals it (its ``request`` names its run and its id)."""
    asked = approval(run_id, approval_id)
    request = msgspec.structs.replace(asked.request, run_id=run_id, request_id=approval_id)
    return msgspec.structs.replace(asked, request=request)


async def _old_requests(journal: Journal) -> tuple[str, str]:
    """A run that asked ``a-decided`` (decided ``deny``) and one that asked ``a-ended``
    and finished without it, then ``NEWER`` newer runs; the two runs' ids."""
    decided_run, ended_run = new_id(), new_id()
    lease = await journal.create_run(created(decided_run), owner="w", ttl=TTL)
    await journal.append(lease, _asked(decided_run, "a-decided"), durable=True)
    no = Deny(reason="over the limit")
    decided = ApprovalDecided(
        run_id=decided_run, approval_id="a-decided", decision=no, decided_by="ana"
    )
    await journal.append(lease, decided, durable=True)
    await journal.release(lease)
    lease = await journal.create_run(created(ended_run, minutes=1), owner="w", ttl=TTL)
    await journal.append(lease, _asked(ended_run, "a-ended"), durable=True)
    await journal.append(lease, RunFinished(run_id=ended_run, status="cancelled"), durable=True)
    for minutes in range(2, NEWER + 2):
        other = await journal.create_run(created(new_id(), minutes=minutes), owner="w", ttl=TTL)
        await journal.append(other, _asked(other.run_id, f"a-{minutes}"), durable=True)
        await journal.release(other)
    return decided_run, ended_run


async def test_a_request_is_found_in_any_run(journal: Journal) -> None:
    decided_run, ended_run = await _old_requests(journal)
    found = await find_approval(journal, "a-decided")
    assert found is not None
    assert found.request.run_id == decided_run
    assert found.decision is not None
    assert found.decision.decided_by == "ana"
    ended = await find_approval(journal, "a-ended")
    assert ended is not None
    assert (ended.request.run_id, ended.decision) == (ended_run, None)
    assert await find_approval(journal, "a-nowhere") is None


@pytest.fixture(params=["sqlite", "postgres"])
def where(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return str(tmp_path / "runs.db")
    return str(request.getfixturevalue("postgres_url"))


async def test_an_old_decided_request_is_already_decided_not_unknown(where: str) -> None:
    journal = await open_journal(where)
    try:
        await _old_requests(journal)
    finally:
        await journal.close()
    async with make_team().start(journal=where) as running:
        with pytest.raises(ApprovalError, match="already decided by ana") as decided:
            await running.approve("a-decided", Approve())
        with pytest.raises(ApprovalError, match=r"has ended \(cancelled\)") as ended:
            await running.approve("a-ended", Approve())
        with pytest.raises(ApprovalError) as unknown:
            await running.approve("a-nowhere", Approve())
    assert (decided.value.kind, ended.value.kind, unknown.value.kind) == (
        "decided",
        "ended",
        "unknown",
    )


@pytest.mark.parametrize("anyio_backend", ["asyncio"])  # (uvicorn)
async def test_the_service_answers_409_for_an_old_decided_request(where: str) -> None:
    journal = await open_journal(where)
    try:
        await _old_requests(journal)
    finally:
        await journal.close()
    app = create_app(make_team(), journal=where)
    async with serving(app) as url, httpx.AsyncClient(base_url=url) as c:
        decided = await c.post("/approvals/a-decided", json={"decision": "approve"})
        ended = await c.post("/approvals/a-ended", json={"decision": "approve"})
        unknown = await c.post("/approvals/a-nowhere", json={"decision": "approve"})
    assert decided.status_code == 409, decided.text
    assert "was already decided by ana (deny: over the limit)" in decided.json()["detail"]
    assert ended.status_code == 409, ended.text
    assert unknown.status_code == 404, unknown.text


async def test_a_journal_made_before_the_index_gets_it_and_finds_requests(
    tmp_path: Path,
) -> None:
    path = tmp_path / "runs.db"
    journal = await open_journal(str(path))
    try:
        decided_run, _ = await _old_requests(journal)
    finally:
        await journal.close()
    with sqlite3.connect(path) as conn:  # as a journal of an earlier regiment has it
        conn.execute("DROP INDEX journal_records_approval")
    read_only = await SqliteJournal.open(path, read_only=True)  # (no index: found all the same)
    try:
        found = await find_approval(read_only, "a-decided")
    finally:
        await read_only.close()
    assert found is not None
    assert found.request.run_id == decided_run
    await (await open_journal(str(path))).close()  # opened for writing: indexed again
    with sqlite3.connect(path) as conn:
        plan = conn.execute(
            "EXPLAIN QUERY PLAN SELECT run_id FROM journal_records"
            " WHERE kind = 'approval_requested' AND key = ? LIMIT 1",
            ("approval/a-decided",),
        ).fetchall()
    assert "journal_records_approval" in str(plan), plan


async def test_an_id_no_journal_can_hold_is_found_in_none(journal: Journal) -> None:
    await _old_requests(journal)
    for unstorable in ("a\x00-decided", "a-\ud800"):  # PostgreSQL cannot even be asked them
        assert await find_approval(journal, unstorable) is None
