"""Cancelling a run stalled mid-work (its process SIGKILLed while a tool or a model call
was in flight) ends it from its journal alone: nothing runs again, no model is asked.

Before, ``cancel_paused`` returned ``None`` for it and the service answered ``409 cannot
cancel`` (resume it, then cancel), and a resume re-ran the call in flight before the
cancel landed. Now it ends ``cancelled`` under its lease, its ``RunFailed`` counting
what a resume would (the journaled replies, a call in flight at its most, as an
estimate), and a later resume is refused (real child processes, real SQLite files and
a real PostgreSQL server, uvicorn + httpx for the service).
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import anyio
import httpx2 as httpx
import msgspec
import pytest

from examples.service.serving import serving
from regiment.errors import AlreadyFinished
from regiment.hierarchy import RunFailed
from regiment.hierarchy.run._journaling import LEASE_TTL
from regiment.journal import (
    EventRecorded,
    ModelCallFinished,
    ModelCallStarted,
    RunFinished,
    nested_run_id,
    open_journal,
)
from regiment.models import Usage
from regiment.serve import create_app

from . import in_flight_team, stalled_team
from .killed_child import journal_at, killed_child

pytestmark = pytest.mark.anyio


CASES = [("asyncio", "sqlite"), ("trio", "sqlite"), ("asyncio", "postgres")]


async def _killed_in_tool(where: str, tmp_path: Path, backend: str) -> str:
    args = [where, str(tmp_path / "side"), str(tmp_path / "requests"), backend]
    child = Path(stalled_team.__file__)
    async with killed_child(child, args, tmp_path / "child.log", "in tool", 60) as run_id:
        return run_id


async def _killed_in_flight(where: str, bill: Path, backend: str, shape: str) -> str:
    """The id of a run of ``in_flight_team`` (``shape`` "flat" or "nested") whose process
    was SIGKILLed while its worker's third model call was in flight (``bill``: what its
    model billed)."""
    args = [where, str(bill), "0.004", "worker", shape, backend]
    child = Path(in_flight_team.__file__)
    async with killed_child(child, args, bill.with_name("child.log"), "in flight", 60) as run_id:
        return run_id


def _replies(records: Sequence[object]) -> Usage:
    return sum((r.response.usage for r in records if isinstance(r, ModelCallFinished)), Usage())


@pytest.mark.parametrize(("anyio_backend", "kind"), CASES)
async def test_a_run_killed_in_its_tool_is_cancelled_without_running_again(
    anyio_backend: str, kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    where = journal_at(kind, tmp_path, request)
    run_id = await _killed_in_tool(where, tmp_path, anyio_backend)
    side, asked = tmp_path / "side", tmp_path / "requests"
    assert (side.read_text(), asked.read_text()) == ("m1\n", "planner\nworker\n")
    journal = await open_journal(where)
    try:
        assert (await journal.get_run(run_id)).status == "stalled"
        team = stalled_team.make_team(side, asked)
        async with team.start(journal=journal) as running:
            ended = await running.cancel_paused(run_id, reason="its machine died")
            with pytest.raises(AlreadyFinished):
                await running.resume(run_id)
        assert (await journal.get_run(run_id)).status == "cancelled"
        with pytest.raises(AlreadyFinished):  # its lease was let go, and it is over
            await journal.acquire(run_id, owner="later:1", ttl=5)
        records = [e.record for e in await journal.read(run_id)]
    finally:
        await journal.close()
    # Nothing ran again: the tool's body once, the model asked nothing more.
    assert (side.read_text(), asked.read_text()) == ("m1\n", "planner\nworker\n")
    assert ended is not None
    assert ended.error_type == "RunCancelled"
    assert ended.message.endswith("mid-work: its machine died"), ended.message
    assert (ended.model_calls, ended.tool_calls) == (2, 1)
    assert ended.usage == _replies(records)
    assert ended.usage.micro_usd > 0
    assert ended.estimated_usage == Usage()
    assert [p.version for p in ended.plans] == [1]
    *_, closing, finished = records
    assert isinstance(closing, EventRecorded)
    assert closing.kind == "RunFailed"
    assert msgspec.convert(closing.event, RunFailed) == ended
    assert isinstance(finished, RunFinished)
    assert finished.status == "cancelled"
    # `regiment show` ends the step and its tool call as a cancelled run's: from its report
    shown = await anyio.run_process(
        [sys.executable, "-m", "regiment", "show", run_id, "--json", "--journal", where]
    )
    (step,) = json.loads(shown.stdout)["steps"]
    assert (step["status"], step["ended_by"]) == ("cancelled", "closing_report")
    (call,) = step["unfinished_calls"]
    assert (call["tool"], call["outcome"], call["ended_by"]) == ("mark", "cut", "closing_report")


@pytest.mark.parametrize(("anyio_backend", "kind"), CASES)
async def test_a_model_call_in_flight_is_counted_at_its_most(
    anyio_backend: str, kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    where, bill = journal_at(kind, tmp_path, request), tmp_path / "bill.txt"
    run_id = await _killed_in_flight(where, bill, anyio_backend, "flat")
    billed = bill.read_text()
    journal = await open_journal(where, clock=lambda: time.time() + LEASE_TTL + 1)
    try:
        team = in_flight_team.make_team(bill, 0.004)
        async with team.start(journal=journal) as running:
            ended = await running.cancel_paused(run_id)
        records = [e.record for e in await journal.read(run_id)]
    finally:
        await journal.close()
    assert bill.read_text() == billed  # the model was asked nothing
    (lost,) = [
        r for r in records if isinstance(r, ModelCallStarted) and r.call_key == "step/1/s1/3"
    ]
    assert ended is not None
    assert ended.estimated_usage == lost.most
    assert ended.usage == _replies(records) + lost.most
    assert ended.model_calls == 1 + in_flight_team.SLOW_CALL  # the plan, the worker's 3
    assert ended.usage.micro_usd >= in_flight_team.bill_of(bill)  # never less than billed
    assert isinstance(records[-1], RunFinished)
    assert records[-1].status == "cancelled"


@pytest.mark.parametrize(  # (uvicorn runs on asyncio; the killed child on either)
    ("anyio_backend", "kind", "child"),
    [("asyncio", "sqlite", "trio"), ("asyncio", "postgres", "asyncio")],
)
async def test_the_service_cancels_a_run_stalled_mid_work(
    anyio_backend: str, kind: str, child: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    where = journal_at(kind, tmp_path, request)
    run_id = await _killed_in_tool(where, tmp_path, child)
    side, asked = tmp_path / "side", tmp_path / "requests"
    app = create_app(stalled_team.make_team(side, asked), journal=where)
    async with serving(app) as url, httpx.AsyncClient(base_url=url) as c:
        assert (await c.get(f"/runs/{run_id}")).json()["status"] == "stalled"
        cancel = await c.post(f"/runs/{run_id}/cancel")
        view = (await c.get(f"/runs/{run_id}")).json()
        resumed = await c.post(f"/runs/{run_id}/resume")
    assert cancel.status_code == 202, cancel.text
    assert cancel.json() == {"run_id": run_id, "cancelling": True}
    assert view["status"] == "cancelled", view
    assert resumed.status_code == 409, resumed.text
    assert (side.read_text(), asked.read_text()) == ("m1\n", "planner\nworker\n")


@pytest.mark.parametrize(("anyio_backend", "kind"), CASES)
async def test_a_nested_run_killed_mid_work_ends_with_its_top_run(
    anyio_backend: str, kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    where, bill = journal_at(kind, tmp_path, request), tmp_path / "bill.txt"
    run_id = await _killed_in_flight(where, bill, anyio_backend, "nested")
    billed, nested = bill.read_text(), nested_run_id(run_id, 1, "s1")
    journal = await open_journal(where, clock=lambda: time.time() + LEASE_TTL + 1)
    try:
        team = in_flight_team.make_team(bill, 0.004, nested=True)
        async with team.start(journal=journal) as running:
            ended = await running.cancel_paused(run_id, reason="gone")
            with pytest.raises(AlreadyFinished):
                await running.resume(run_id)
        top = [e.record for e in await journal.read(run_id)]
        below = [e.record for e in await journal.read(nested)]
        statuses = [(await journal.get_run(r)).status for r in (run_id, nested)]
    finally:
        await journal.close()
    assert bill.read_text() == billed  # the model was asked nothing
    assert statuses == ["cancelled", "cancelled"]
    (lost,) = [r for r in below if isinstance(r, ModelCallStarted) and r.call_key == "step/1/s1/3"]
    assert ended is not None
    assert ended.estimated_usage == lost.most
    assert ended.usage == _replies(top) + _replies(below) + lost.most
    assert ended.model_calls == 2 + in_flight_team.SLOW_CALL  # two plans, the worker's 3
    *_, closing, finished = below
    assert isinstance(closing, EventRecorded)
    assert closing.kind == "RunFailed"
    assert msgspec.convert(closing.event, RunFailed).estimated_usage == lost.most
    assert isinstance(finished, RunFinished)
    assert finished.status == "cancelled"
    assert finished.error is not None
    assert finished.error.endswith("(with its top run)")
