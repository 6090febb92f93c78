"""Metrics exported over real OTLP/HTTP by ``configure_tracing``'s set-up, decoded from protobuf."""

from __future__ import annotations

import dataclasses
from collections import Counter

import pytest
from opentelemetry.metrics import NoOpMeterProvider

from examples.refund.brain import refund_brain
from examples.refund.team import GOAL, build_team
from examples.refund.tools import Ledger
from regiment.hierarchy import Planner, RunResult, Team, Worker
from regiment.models import (
    ModelRequest,
    ModelResponse,
    ScriptedModel,
    text_response,
    tool_call_response,
)
from regiment.telemetry import Telemetry, configure_tracing
from regiment.tools import tool

from .otlp_receiver import OtlpReceiver, ReceivedMetric

pytestmark = pytest.mark.anyio

TOKEN_BUCKETS = tuple(float(4**n) for n in range(14))
DURATION_BUCKETS = tuple(0.01 * 2**n for n in range(14))


async def _run(
    team: Team | None = None, goal: str = GOAL
) -> tuple[RunResult, dict[str, ReceivedMetric]]:
    """The result of ``team``'s run of ``goal`` (the refund example's by default), and
    the metrics it exported."""
    team = team or build_team(ScriptedModel(refund_brain), Ledger())
    with OtlpReceiver() as receiver:
        handle = configure_tracing("metrics", endpoint=receiver.endpoint, set_global=False)
        assert handle.meter_provider is not None
        telemetry = Telemetry(handle.provider, meter_provider=handle.meter_provider)
        result = await dataclasses.replace(team, telemetry=telemetry).run(goal)
        handle.shutdown()  # exports the last (cumulative) points
        # The last export of each metric holds its totals.
        return result, {m.name: m for m in receiver.metrics()}


async def test_genai_client_histograms_follow_the_conventions() -> None:
    result, metrics = await _run()
    usage = metrics["gen_ai.client.token.usage"]
    assert (usage.kind, usage.unit) == ("histogram", "{token}")
    by_type = {p.attributes["gen_ai.token.type"]: p for p in usage.points}
    assert set(by_type) == {"input", "output"}
    total = result.usage
    whole_input = total.input_tokens + total.cache_read_tokens + total.cache_write_tokens
    assert by_type["input"].value == whole_input
    assert by_type["output"].value == total.output_tokens
    assert by_type["input"].count == result.model_calls
    assert by_type["input"].bounds == TOKEN_BUCKETS
    for point in usage.points:
        assert point.attributes["gen_ai.operation.name"] == "chat"
        assert point.attributes["gen_ai.provider.name"] == "scripted"
        assert point.attributes["gen_ai.request.model"] == "scripted"
    duration = metrics["gen_ai.client.operation.duration"]
    assert (duration.kind, duration.unit) == ("histogram", "s")
    assert sum(p.count for p in duration.points) == result.model_calls
    assert all(p.bounds == DURATION_BUCKETS for p in duration.points)
    assert all("error.type" not in p.attributes for p in duration.points)


async def test_regiment_counters_match_the_run() -> None:
    result, metrics = await _run()
    steps = metrics["regiment.steps"]
    assert steps.kind == "sum"
    assert steps.monotonic
    counted = Counter[str]()
    for point in steps.points:
        counted[str(point.attributes["regiment.step.outcome"])] += int(point.value)
    assert counted == Counter(report.status for report in result.steps)
    replans = metrics["regiment.replans"]
    assert sum(p.value for p in replans.points) == len(result.plans) - 1 == 1
    tools = metrics["regiment.tool.duration"]
    assert (tools.kind, tools.unit) == ("histogram", "s")
    assert sum(p.count for p in tools.points) == result.tool_calls
    assert {p.attributes["gen_ai.tool.name"] for p in tools.points} == {
        "check_eligibility",
        "flag_exception",
        "email_customer",
    }
    active = metrics["regiment.runs.active"]
    assert active.kind == "sum"
    assert not active.monotonic
    assert [p.value for p in active.points] == [0]  # the run began and ended
    assert (
        "regiment.stale_reports" not in metrics
        or sum(p.value for p in metrics["regiment.stale_reports"].points)
        == result.stale_reports_dropped
    )


async def test_a_paused_runs_step_counts_as_awaiting_approval() -> None:
    # As its span says: it was counted `cancelled`, though nothing called it off.
    @tool(requires_approval=True)
    def pay(order: str) -> str:
        """Pay."""
        return order

    def brain(request: ModelRequest) -> ModelResponse:
        if request.role == "planner":
            return text_response('{"steps": [{"id": "s1", "description": "pay"}]}')
        return tool_call_response("pay", {"order": "7"})

    model = ScriptedModel(brain)
    worker = Worker(name="w", description="Pays.", model=model, tools=[pay])
    team = Team(name="t", planner=Planner(model=model), workers=[worker])
    result, metrics = await _run(team, "pay order 7")
    assert result.status == "paused"
    outcomes = {
        str(p.attributes["regiment.step.outcome"]) for p in metrics["regiment.steps"].points
    }
    assert outcomes == {"awaiting_approval"}


def test_a_meter_provider_that_records_nothing_means_no_metric_work() -> None:
    assert Telemetry(meter_provider=NoOpMeterProvider()).metrics is None
