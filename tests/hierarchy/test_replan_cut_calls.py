"""A replan lists the tool calls of the steps it cuts, not only of those that did not hold.

A replan cuts the steps of the version it replaces that are still in flight, and drops
their reports; but a cut step's calls may have acted (a refund issued, a mail on its
way). Its report comes after the replan's request (the new plan is not held up by steps
winding down), so the request listed none of its calls, and a new plan could repeat the
refund unknowingly. Now each in-process step that called tools is known to its run's
fence until it reports: the request lists its calls so far, marked as from a cut step
whose result is unknown (a call running as it is cut: ``called, result unknown``); a
resumed run lists them from the cut step's journaled report."""

from __future__ import annotations

import sqlite3
import threading
import time
from pathlib import Path

import anyio
import pytest

from regiment.hierarchy import Prompts, RunStarted, StaleReportDropped, Team
from regiment.hierarchy.run._journaling import LEASE_TTL
from regiment.journal import SqliteJournal
from regiment.models import ModelRequest, ModelResponse, TextPart, tool_call_response
from regiment.tools import Tool, tool

from .brains import Brain, WorkFn, plan_json
from .replan_team import PROBE, RECOVER, replan_team

pytestmark = pytest.mark.anyio

LINE = Prompts().calls_made
SIDE = {"id": "s2", "description": "side"}  # runs beside the probe, cut by the replan
CUT = f"{LINE}\n- s2 (v1, worker 'w', cut as its plan version was replaced, result unknown): "
CUT_LINE = CUT + "refund succeeded; mail called, result unknown (it may have acted)"
# resumed: from the cut step's journaled report, which says how the mail ended
RESUMED_LINE = (
    CUT + "refund succeeded; mail started and was cut before it finished (it may have acted)"
)


def _text(request: ModelRequest) -> str:
    return "\n".join(p.text for m in request.messages for p in m.parts if isinstance(p, TextPart))


class Desk:
    """The side step refunds, then mails (a mail that never ends); the probe answers
    once the mail's body has begun, and its check rejects it: the replan cuts the mail."""

    def __init__(self) -> None:
        self.refunds = 0
        self.mails = 0
        self.mailing = anyio.Event()

    def tools(self) -> list[Tool[..., object]]:
        @tool
        def refund(order_id: str) -> str:
            """Refund an order."""
            self.refunds += 1
            return f"refunded {order_id}"

        @tool
        async def mail(order_id: str) -> str:
            """Mail the customer."""
            self.mails += 1
            self.mailing.set()
            await anyio.sleep_forever()
            raise AssertionError("unreachable")

        return [refund, mail]

    def work(self) -> WorkFn:
        async def work(
            description: str, results: list[object], request: ModelRequest
        ) -> ModelResponse | str:
            if description == "side":
                calls = sum(len(m.parts) for m in request.messages if m.role == "assistant")
                name = ("refund", "mail")[min(calls, 1)]
                return tool_call_response(name, {"order_id": "7"}, call_id=f"c{calls}")
            if description == "probe":
                await self.mailing.wait()
            return f"did: {description}"

        return work  # type: ignore[return-value]


def _team(desk: Desk, brain: Brain) -> Team:
    return replan_team(brain, tools=desk.tools())


async def test_the_replan_lists_the_calls_of_a_step_it_cut() -> None:
    desk = Desk()
    brain = Brain([plan_json(PROBE, SIDE), RECOVER], work=desk.work())
    result = await _team(desk, brain).run("refund order 7")
    assert result.status == "completed", result
    assert (desk.refunds, desk.mails) == (1, 1)
    (dropped,) = [e for e in result.events if isinstance(e, StaleReportDropped)]
    assert (dropped.step_id, dropped.status) == ("s2", "cancelled")
    assert len(brain.plan_requests) == 2
    text = _text(brain.plan_requests[1])
    assert text.count(LINE) == 1
    assert text.endswith(CUT_LINE)  # (the probe made no call: no line of its own)


async def test_a_cut_step_with_no_calls_is_not_listed() -> None:
    desk = Desk()
    hold = anyio.Event()

    async def work(
        description: str, results: list[object], request: ModelRequest
    ) -> ModelResponse | str:
        if description == "side":
            hold.set()
            await anyio.sleep_forever()
        await hold.wait()
        return f"did: {description}"

    brain = Brain([plan_json(PROBE, SIDE), RECOVER], work=work)  # type: ignore[arg-type]
    result = await _team(desk, brain).run("refund order 7")
    assert result.status == "completed", result
    assert result.stale_reports_dropped == 1
    assert LINE not in _text(brain.plan_requests[1])


def _copy(live: Path, copy: Path) -> None:
    """Copy what ``live`` has committed, once the write under way (a COMMIT begun) is."""
    writer = sqlite3.connect(live, timeout=30, isolation_level=None)
    writer.execute("BEGIN IMMEDIATE")  # waits for the journal's write lock
    writer.execute("ROLLBACK")
    writer.close()
    with sqlite3.connect(live) as source, sqlite3.connect(copy) as target:
        source.backup(target)
    source.close()
    target.close()


def _committed(journal: SqliteJournal, text: str) -> threading.Event:
    """Set once a write transaction that inserted a record whose body holds ``text``
    begins to commit (SQLite's own statement trace of the journal's connection)."""
    wanted, seen, done = text.encode().hex().upper(), [False], threading.Event()

    def trace(statement: str) -> None:
        if wanted in statement.upper():
            seen[0] = True
        elif statement == "COMMIT" and seen[0]:
            done.set()

    journal._store._connection().set_trace_callback(trace)  # type: ignore[attr-defined]
    return done


async def test_a_resumed_run_lists_them_from_its_journal(tmp_path: Path) -> None:
    """Stopped while the planner makes the replan (a kill then leaves the journal as
    copied), the run is resumed from that copy: the cut step's report is the journal's,
    no body runs again, and the replan's request lists its calls all the same."""
    live, copy = tmp_path / "live.db", tmp_path / "copy.db"
    desk, asked = Desk(), anyio.Event()

    class Stalls(Brain):
        async def __call__(self, request: ModelRequest) -> ModelResponse | str:
            if request.role == "replanner":
                asked.set()
                await anyio.sleep_forever()  # the kill comes while it is asked
            return await super().__call__(request)

    team = _team(desk, Stalls([plan_json(PROBE, SIDE)], work=desk.work()))
    run_ids: list[str] = []

    async def run() -> None:
        async with running.stream("refund order 7") as events:
            async for event in events:
                if isinstance(event, RunStarted):
                    run_ids.append(event.run_id)

    journal = await SqliteJournal.open(live)
    dropped = _committed(journal, "StaleReportDropped")  # the cut step's drop, durable
    try:
        async with team.start(journal=journal) as running, anyio.create_task_group() as tg:
            tg.start_soon(run)
            await asked.wait()
            assert await anyio.to_thread.run_sync(dropped.wait, 30)
            await anyio.to_thread.run_sync(_copy, live, copy)  # what a kill -9 would leave
            tg.cancel_scope.cancel()
    finally:
        await journal.close()
    assert (desk.refunds, desk.mails) == (1, 1)

    again = Desk()
    brain = Brain([RECOVER], work=again.work())
    # A clock a lease's length ahead: the killed owner's lease has run out.
    resumed = await SqliteJournal.open(copy, clock=lambda: time.time() + LEASE_TTL + 1)
    try:
        async with _team(again, brain).start(journal=resumed) as running:
            result = await running.resume(run_ids[0])
    finally:
        await resumed.close()
    assert result.status == "completed", result
    assert (again.refunds, again.mails) == (0, 0)  # replayed: no body ran again
    (request,) = brain.plan_requests  # the first plan's reply was replayed
    assert _text(request).endswith(RESUMED_LINE)
