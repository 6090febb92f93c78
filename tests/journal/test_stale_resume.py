"""A report a replan dropped as stale stays dropped when the run is resumed."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import anyio
import pytest

from regiment.hierarchy import (
    JournaledEvents,
    PlanCreated,
    StaleReportDropped,
    StepCompleted,
    StepDispatched,
)
from regiment.journal import open_journal
from regiment.models import ModelRequest, ModelResponse, ToolResultPart, tool_call_response
from regiment.tools import Approve, tool
from tests.hierarchy.brains import Brain, plan_json
from tests.hierarchy.replan_team import replan_team

pytestmark = pytest.mark.anyio

FIRST = plan_json(
    {"id": "s2", "description": "side"},  # sent first: on resume its replay comes first
    {"id": "s1", "description": "probe", "check": "fails"},
)
REPLAN = plan_json({"id": "s3", "description": "recover", "depends_on": ["s1"]})


class _Story(Brain):
    """v1's side step charges, then answers only after the probe's failed check has
    asked for a replan (its report is dropped); v2's step waits for an approval."""

    def __init__(self) -> None:
        super().__init__([FIRST, REPLAN], work=self._work, synthesis="the answer")
        self.charges: list[str] = []
        self.charged, self.replanned = anyio.Event(), anyio.Event()

    async def __call__(self, request: ModelRequest) -> ModelResponse | str:
        if request.role == "replanner":
            self.replanned.set()
        return await super().__call__(request)

    async def _work(
        self, description: str, results: list[ToolResultPart], request: ModelRequest
    ) -> ModelResponse | str:
        if description in ("quick", "extra"):  # see the last test
            return f"did: {description}"
        tools = {"side": "charge", "probe": "look", "recover": "refund"}
        if not results:
            return tool_call_response(tools[description], {})
        if description == "side":
            with anyio.CancelScope(shield=True):  # a model call on the wire past the replan
                await self.replanned.wait()
            return "SIDE-DONE"
        if description == "probe":
            await self.charged.wait()
        return f"did: {description}"

    def tools(self) -> list[object]:
        @tool
        def charge() -> str:
            """Charge the card."""
            self.charges.append("charged")
            self.charged.set()
            return "charged"

        @tool
        def look() -> str:
            """Look."""
            return "looked"

        @tool(requires_approval=True)
        def refund() -> str:
            """Refund."""
            return "refunded"

        return [charge, look, refund]


async def test_a_resumed_run_drops_a_stale_report_again(tmp_path: Path) -> None:
    brain = _Story()
    team = replan_team(brain, tools=brain.tools())  # type: ignore[arg-type]
    async with team.start(journal=tmp_path / "runs.db") as running:
        paused = await running.run("goal")
        assert paused.status == "paused"
        assert paused.committed == ()
        assert paused.rejected == ("s1",)
        (request,) = paused.pending_approvals
        await running.approve(request.request_id, Approve(), by="ana")
        result = await running.resume(paused.run_id)
    journal = await open_journal(tmp_path / "runs.db")
    try:
        journaled = (await JournaledEvents.read(journal, paused.run_id)).events
    finally:
        await journal.close()
    told = [
        (e.report_version, e.current_version)
        for e in journaled
        if isinstance(e, StaleReportDropped)
    ]
    assert told == [(1, 2)]  # the drop is journaled once, as the run first told it
    assert result.status == "completed"
    assert brain.charges == ["charged"]  # the stale step's tool ran once, before the pause
    assert result.committed == ("s3",)
    assert result.rejected == ("s1",)
    assert [[s.id for s in plan.steps] for plan in result.plans] == [["s2", "s1"], ["s1", "s3"]]
    completed = [(e.plan_version, e.step_id) for e in result.events if isinstance(e, StepCompleted)]
    assert completed == [(2, "s3")]
    dropped = [
        (e.report_version, e.step_id) for e in result.events if isinstance(e, StaleReportDropped)
    ]
    assert dropped == [(1, "s2")]
    synthesis = brain.synthesis_requests[-1].messages[-1].parts[0]
    assert "SIDE-DONE" not in getattr(synthesis, "text", "")


async def test_a_resumed_run_tells_the_drop_after_the_version_it_names(tmp_path: Path) -> None:
    # The resume replays the stale report as its step is sent (under v1); its drop names
    # v2, so it comes once v2 is announced, as in the run before the resume.
    brain = _Story()
    team = replan_team(brain, tools=brain.tools())  # type: ignore[arg-type]
    async with team.start(journal=tmp_path / "runs.db") as running:
        paused = await running.run("goal")
        (request,) = paused.pending_approvals
        await running.approve(request.request_id, Approve(), by="ana")
        result = await running.resume(paused.run_id)
    for told in (paused.events, result.events):
        order = [
            ("plan", e.plan.version)
            if isinstance(e, PlanCreated)
            else ("dropped", e.current_version)
            for e in told
            if isinstance(e, (PlanCreated, StaleReportDropped))
        ]
        assert order == [("plan", 1), ("plan", 2), ("dropped", 2)]
    assert result.stale_reports_dropped == 1


async def test_a_resumed_run_sends_no_step_the_run_before_it_never_sent(tmp_path: Path) -> None:
    # Two steps at a time: the side step holds its slot until the replan drops its report,
    # so 'extra' never goes before v1 is replaced. The resume replays the side step's
    # report at once; it must keep holding the slot, or 'quick''s replayed commit would
    # send 'extra' (and s1) into the freed slots: work the run before it never did.
    brain = _Story()
    brain.plans = [
        plan_json(
            {"id": "s2", "description": "side"},
            {"id": "s0", "description": "quick"},
            {"id": "s1", "description": "probe", "check": "fails"},
            {"id": "s5", "description": "extra"},
        ),
        REPLAN,
    ]
    team = replan_team(brain, tools=brain.tools())  # type: ignore[arg-type]
    team = dataclasses.replace(team, concurrency=2)
    async with team.start(journal=tmp_path / "runs.db") as running:
        paused = await running.run("goal")
        assert paused.status == "paused"
        (request,) = paused.pending_approvals
        await running.approve(request.request_id, Approve(), by="ana")
        result = await running.resume(paused.run_id)
    assert result.status == "completed"
    sent = [(e.plan_version, e.step_id) for e in result.events if isinstance(e, StepDispatched)]
    assert [s for _, s in sent] == ["s2", "s0", "s1", "s3"]
    assert result.committed == ("s0", "s3")
