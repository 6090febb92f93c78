"""A step of a plan the planner has just disproved starts no tool: the refund of an
order found ineligible is never issued because its step was still in flight.

The race, made exact: two independent steps; the eligibility step's check fails, and
the refund step's model answers (with the refund call) at that very moment: the check
itself lets it answer. On the old tree the refund's body ran after the planner had
decided to replan, as the cancel for its step was still in its worker's mailbox."""

from __future__ import annotations

import json

import anyio
import pytest

from regiment.hierarchy import (
    Check,
    Planner,
    StaleReportDropped,
    StepReport,
    Team,
    TeamWorker,
    Worker,
)
from regiment.models import ModelRequest, ModelResponse, ScriptedModel, ToolCallPart
from regiment.tools import Tool, tool

pytestmark = pytest.mark.anyio


class Desk:
    """The eligibility step answers once the refund step's model is asked, and that
    model answers once the eligibility check has judged."""

    def __init__(self) -> None:
        self.judged = anyio.Event()
        self.waiting = anyio.Event()  # the refund step's model is asked: the check may run
        self.log: list[str] = []

    def eligible(self, report: StepReport) -> bool:
        self.log.append(f"judged {report.step_id}")
        self.judged.set()  # the refund step's model answers now, as the planner replans
        return "not eligible" not in report.output

    async def brain(self, request: ModelRequest) -> ModelResponse | str:
        if request.role == "planner" and "This is step s2" in request.messages[0].text:
            return json.dumps({"steps": [{"description": "refund order 7 now"}]})  # nested
        if request.role == "planner":
            steps = [
                {"description": "check order 7", "worker": "clerk", "check": "eligible"},
                {"description": "refund order 7", "worker": "payer"},
            ]
            return json.dumps({"steps": steps})
        if request.role == "replanner":
            return json.dumps({"steps": [{"description": "flag order 7", "worker": "clerk"}]})
        if request.role == "worker" and request.worker == "payer":
            if len(request.messages) > 1:
                return "refunded"
            self.waiting.set()
            await self.judged.wait()
            call = ToolCallPart(id="c1", name="issue_refund", arguments={"order": "7"})
            return ModelResponse(parts=(call,), stop_reason="tool_use", model="scripted")
        if request.role == "worker":
            await self.waiting.wait()
            return "order 7 is not eligible" if "check" in request.messages[0].text else "flagged"
        return "order 7 was flagged"


def payer(model: ScriptedModel, refund: Tool[..., object], *, nested: bool) -> Worker | TeamWorker:
    worker = Worker(name="payer", description="refunds", model=model, tools=[refund])
    if not nested:
        return worker
    team = Team(name="payments", planner=Planner(model=model), workers=[worker])
    return TeamWorker(name="payer", description="a payments team", team=team)


@pytest.mark.parametrize("nested", [False, True], ids=["worker", "nested-team"])
async def test_a_disproved_plan_starts_no_tool_of_a_step_in_flight(nested: bool) -> None:
    desk = Desk()

    @tool
    async def issue_refund(order: str) -> str:
        """Refund an order."""
        desk.log.append(f"refund {order}")
        return "refunded"

    model = ScriptedModel(desk.brain)
    team = Team(
        name="refunds",
        planner=Planner(model=model),
        workers=[
            Worker(name="clerk", description="checks and flags orders", model=model),
            payer(model, issue_refund, nested=nested),
        ],
        checks={"eligible": Check(description="the order is eligible", predicate=desk.eligible)},
    )
    result = await team.run("refund order 7 if it is eligible")

    assert desk.log == ["judged s1"]  # the refund's body never ran
    assert result.status == "completed"
    assert [r.step_id for r in result.steps] == ["s1", "s3"]  # s3: the replan's flag
    (dropped,) = [e for e in result.events if isinstance(e, StaleReportDropped)]
    assert (dropped.step_id, dropped.report_version, dropped.status) == ("s2", 1, "cancelled")
