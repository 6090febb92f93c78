"""One trace: the replicas' model and tool spans, exported from the Ray processes to a
real OTLP receiver, are children of the planner side's ``invoke_agent`` step spans."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from types import ModuleType

import pytest

from examples.refund.team import GOAL
from regiment.telemetry import Telemetry, configure_tracing

from ..telemetry.otlp_receiver import OtlpReceiver
from ._ray_team import ray_refund_team

pytestmark = [pytest.mark.anyio, pytest.mark.ray, pytest.mark.timeout(180)]  # Ray starts processes


async def test_replica_spans_join_the_runs_trace(ray_session: ModuleType, tmp_path: Path) -> None:
    with OtlpReceiver() as receiver:
        tracing = configure_tracing("planner-side", endpoint=receiver.endpoint, set_global=False)
        team = ray_refund_team(
            str(tmp_path / "ledger.jsonl"), num_cpus=0, otlp_endpoint=receiver.endpoint
        )
        telemetry = Telemetry(tracing.provider, meter_provider=tracing.meter_provider)
        team = dataclasses.replace(team, telemetry=telemetry)
        result = await team.run(GOAL)  # leaving the team flushes the replicas' spans
        tracing.shutdown()
        spans = receiver.spans()
        metrics = receiver.metrics()

    assert result.status == "completed"
    assert {s.trace_id for s in spans} == {result.trace_id}
    by_id = {s.span_id: s for s in spans}
    services = {s.resource["service.name"] for s in spans}
    assert services == {"planner-side", "regiment-ray:billing", "regiment-ray:comms"}
    remote = [s for s in spans if s.resource["service.name"] != "planner-side"]
    tools = sorted(s.name for s in remote if s.name.startswith("execute_tool"))
    assert tools == [
        "execute_tool check_eligibility",
        "execute_tool email_customer",
        "execute_tool flag_exception",
    ]
    assert sum(s.name.startswith("chat") for s in remote) == 6  # two model calls per step
    for span in remote:  # each hangs under a step span from the planner's process
        parent = span
        while parent.resource["service.name"] != "planner-side":
            assert parent.parent_span_id is not None, f"{span.name} has no local ancestor"
            parent = by_id[parent.parent_span_id]
        assert parent.name in ("invoke_agent billing", "invoke_agent comms")
    # One tree as Jaeger draws it: one root, and every span's parent was exported.
    assert [s.name for s in spans if s.parent_span_id is None] == ["invoke_agent refunds"]
    assert all(s.parent_span_id in by_id for s in spans if s.parent_span_id is not None)
    # A replica's tool span says what the tool does, as the team's process would.
    for span in remote:
        if span.name.startswith("execute_tool"):
            assert span.attributes["gen_ai.tool.description"], span.name

    # Every model call is metered once, in the process that made it: the replicas'
    # six were not metered at all. Each export is cumulative: the last one per process.
    calls: dict[object, int] = {}
    for metric in metrics:
        if metric.name == "gen_ai.client.token.usage":
            inputs = [p for p in metric.points if p.attributes["gen_ai.token.type"] == "input"]
            calls[metric.resource["service.name"]] = sum(p.count for p in inputs)
    assert calls == {"planner-side": 3, "regiment-ray:billing": 4, "regiment-ray:comms": 2}
    assert sum(calls.values()) == result.model_calls


async def test_a_run_cancelled_mid_tool_on_a_replica_is_one_tree(
    probe: tuple[str, object],
) -> None:
    from regiment.hierarchy import StepDispatched

    from ._ray_team import holder_team, plan_text

    name, handle = probe
    hold = {"id": "s1", "description": "Hold order 88213", "worker": "holder"}
    with OtlpReceiver() as receiver:
        tracing = configure_tracing("planner-side", endpoint=receiver.endpoint, set_global=False)
        team = holder_team(name, [plan_text(hold)], num_cpus=0, otlp_endpoint=receiver.endpoint)
        team = dataclasses.replace(team, telemetry=Telemetry(tracing.provider))
        async with team.start() as running, running.stream("hold order 88213") as events:
            async for event in events:
                if isinstance(event, StepDispatched):
                    await handle.wait_started.remote(1)  # type: ignore[attr-defined]
                    break  # leaving the block cancels the run mid-tool
        tracing.shutdown()  # leaving the team flushed the replica's spans
        spans = receiver.spans()
    by_id = {s.span_id: s for s in spans}
    assert [s.name for s in spans if s.parent_span_id is None] == ["invoke_agent holding"]
    assert all(s.parent_span_id in by_id for s in spans if s.parent_span_id is not None)
    assert len({s.trace_id for s in spans}) == 1
    (step,) = [s for s in spans if s.name == "invoke_agent holder"]
    assert step.attributes["regiment.cancelled"] is True
    # the replica's call, cut in its own process, reads cancelled under the step
    remote = [s for s in spans if s.resource["service.name"] != "planner-side"]
    tools = [s for s in remote if s.name.startswith("execute_tool")]
    assert tools
    for tool in tools:
        assert tool.attributes.get("regiment.cancelled") is True, tool.name
        assert tool.status_code == 0
        parent = tool
        while parent.resource["service.name"] != "planner-side":
            parent = by_id[str(parent.parent_span_id)]
        assert parent is step
