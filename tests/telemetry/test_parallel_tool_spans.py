"""Parallel tool calls of one reply, in two runs at once inside the caller's own spans: every
``execute_tool`` span hangs under its own step's ``invoke_agent`` span, in its run's trace.

Other runtimes lose or misparent the spans of tool calls run side by side (the trace context
not carried into each concurrent task); a regression test that ours keeps them.
"""

from __future__ import annotations

import anyio
import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.trace import SpanContext

from regiment.hierarchy import Planner, Team, Worker
from regiment.models import ModelRequest, ModelResponse, ScriptedModel, ToolCallPart
from regiment.telemetry import SpanCollector, Telemetry
from regiment.tools import tool
from tests.hierarchy.brains import plan_json, tool_results

pytestmark = pytest.mark.anyio

CALLS = 3


async def test_parallel_tool_spans_hang_under_their_own_step_in_their_own_trace() -> None:
    collector = SpanCollector()
    provider = TracerProvider(shutdown_on_exit=False)
    provider.add_span_processor(collector)
    in_flight = 0
    all_in = anyio.Event()

    @tool
    async def probe(n: int) -> str:
        """Wait until every call of both runs is in flight, so they overlap."""
        nonlocal in_flight
        in_flight += 1
        if in_flight == 2 * CALLS:
            all_in.set()
        await all_in.wait()
        return f"p{n}"

    def brain(request: ModelRequest) -> ModelResponse | str:
        if request.role in ("planner", "replanner"):
            return plan_json({"description": "probe"})
        if request.role == "worker":
            if tool_results(request):
                return "done"
            calls = [ToolCallPart(id=f"c{n}", name="probe", arguments={"n": n}) for n in range(3)]
            return ModelResponse(parts=tuple(calls), stop_reason="tool_use", model="m")
        return "answer"

    model = ScriptedModel(brain)
    worker = Worker(name="w", description="probes", model=model, tools=[probe])
    team = Team(
        name="t", planner=Planner(model=model), workers=[worker], telemetry=Telemetry(provider)
    )
    tracer = provider.get_tracer("app")

    async def caller(k: int) -> None:
        with tracer.start_as_current_span(f"request {k}"):
            assert (await running.run(f"goal {k}")).status == "completed"

    async with team.start() as running, anyio.create_task_group() as tg:
        for k in range(2):
            tg.start_soon(caller, k)

    spans = collector.spans()
    by_id = {_ctx(s).span_id: s for s in spans}
    tools = [s for s in spans if s.name == "execute_tool probe"]
    assert len(tools) == 2 * CALLS
    for span in tools:
        assert span.parent is not None
        step = by_id[span.parent.span_id]
        assert step.name == "invoke_agent w"
        assert _ctx(step).trace_id == _ctx(span).trace_id
    for span in spans:  # one trace per caller, each rooted in the caller's span
        if span.parent is None:
            assert span.name.startswith("request ")
        else:
            assert _ctx(by_id[span.parent.span_id]).trace_id == _ctx(span).trace_id
    runs_by_trace: dict[int, set[object]] = {}
    for span in spans:
        run = (span.attributes or {}).get("regiment.run.id")
        if run is not None:
            runs_by_trace.setdefault(_ctx(span).trace_id, set()).add(run)
    assert sorted(len(runs) for runs in runs_by_trace.values()) == [1, 1]


def _ctx(span: ReadableSpan) -> SpanContext:
    context: SpanContext | None = span.context
    assert context is not None
    return context
