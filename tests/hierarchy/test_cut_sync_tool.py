"""A step cut while its sync tool's body runs: the body cannot be stopped (Python cannot
stop a thread), so it runs to its end unseen; its result is dropped, never applied, and
the call's span and a warning say that it ran on, where the span alone read cancelled."""

from __future__ import annotations

import json
import logging
import threading

import anyio
import anyio.to_thread
import pytest
from opentelemetry.sdk.trace import TracerProvider

from regiment.hierarchy import Check, Planner, StaleReportDropped, Team, Worker
from regiment.models import ModelRequest, ModelResponse, ScriptedModel, ToolCallPart
from regiment.telemetry import SpanCollector, Telemetry
from regiment.tools import abandoned_tool_calls, tool

pytestmark = pytest.mark.anyio


class Refunds:
    """The refund's body starts, then the eligibility check fails (the plan is replaced
    and the refund step cut); the body is let go on only after the run."""

    def __init__(self) -> None:
        self.started, self.release = threading.Event(), threading.Event()
        self.done: list[str] = []  # the refunds made

    def issue_refund(self, order: str) -> str:
        self.started.set()
        self.release.wait(30)
        self.done.append(order)
        return "refunded"

    async def brain(self, request: ModelRequest) -> ModelResponse | str:
        if request.role == "planner":
            steps = [
                {"description": "check order 7", "worker": "clerk", "check": "eligible"},
                {"description": "refund order 7", "worker": "payer"},
            ]
            return json.dumps({"steps": steps})
        if request.role == "replanner":
            return json.dumps({"steps": [{"description": "flag order 7", "worker": "clerk"}]})
        if request.role == "worker" and request.worker == "payer":
            call = ToolCallPart(id="c1", name="issue_refund", arguments={"order": "7"})
            return ModelResponse(parts=(call,), stop_reason="tool_use", model="scripted")
        if request.role == "worker":
            if "check" not in request.messages[0].text:
                return "flagged"
            await anyio.to_thread.run_sync(self.started.wait, 30)  # the body runs now
            return "order 7 is not eligible"
        return "order 7 was flagged"


async def test_a_sync_body_cut_as_it_runs_is_said_to_run_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    refunds = Refunds()

    @tool
    def issue_refund(order: str) -> str:
        """Refund an order."""
        return refunds.issue_refund(order)

    collector = SpanCollector()
    provider = TracerProvider(shutdown_on_exit=False)
    provider.add_span_processor(collector)
    model = ScriptedModel(refunds.brain)
    team = Team(
        name="refunds",
        planner=Planner(model=model),
        telemetry=Telemetry(provider),
        workers=[
            Worker(name="clerk", description="checks and flags orders", model=model),
            Worker(name="payer", description="refunds", model=model, tools=[issue_refund]),
        ],
        checks={
            "eligible": Check(
                description="the order is eligible",
                predicate=lambda report: "not eligible" not in report.output,
            )
        },
    )
    try:
        with caplog.at_level(logging.WARNING, logger="regiment.tools"):
            result = await team.run("refund order 7 if it is eligible")
        assert abandoned_tool_calls() == 1  # the run is over; the body still runs
    finally:
        refunds.release.set()

    (dropped,) = [e for e in result.events if isinstance(e, StaleReportDropped)]
    assert (dropped.step_id, dropped.status) == ("s2", "cancelled")
    assert dropped.step_id not in [r.step_id for r in result.steps]  # never applied
    (span,) = [s for s in collector.spans() if s.name == "execute_tool issue_refund"]
    assert "regiment.tool.left_running" in [event.name for event in span.events]
    (warning,) = [r for r in caplog.records if r.name == "regiment.tools"]
    assert "issue_refund was cancelled while its body ran in a worker thread" in warning.message
    while abandoned_tool_calls():  # the body ends once let go: the refund was made
        await anyio.to_thread.run_sync(refunds.release.wait)
    assert refunds.done == ["7"]
