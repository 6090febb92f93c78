"""The console view: a finished run's span tree as text."""

from __future__ import annotations

import io
import re
from dataclasses import dataclass

import pytest
from opentelemetry.sdk.trace import TracerProvider

from regiment.telemetry import (
    ConsoleTraceProcessor,
    SpanCollector,
    Telemetry,
    render_trace,
)

DURATION = re.compile(r"  \d+\.\d ms")


@dataclass(frozen=True)
class FakeUsage:
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0


def small_run(telemetry: Telemetry) -> None:
    with telemetry.run_span("refunds", "run-1", "goal") as run:
        with (
            telemetry.plan_span("planner", plan_version=1),
            telemetry.chat_span("m1", "anthropic") as chat,
        ):
            telemetry.recorder.chat_response(
                chat, finish_reasons=("end_turn",), usage=FakeUsage(10, 2, 5)
            )
        with telemetry.agent_span("billing", step_id="s1", plan_version=1, attempt=1) as worker:
            with telemetry.tool_span("refund", "call-1") as tool:
                telemetry.recorder.tool_outcome(tool, "ok")
            telemetry.recorder.step_outcome(worker, "succeeded")
        replanning = telemetry.replan_span(
            old_version=1, reason="amount too high", planner="planner"
        )
        with replanning as replan:
            telemetry.recorder.replan(replan, new_version=2)
        telemetry.recorder.stale_report(run, step_id="s2", report_version=1, current_version=2)
        with pytest.raises(TimeoutError), telemetry.tool_span("mail", "call-2"):
            raise TimeoutError
        with telemetry.phase_span("synthesize"):
            pass
        telemetry.recorder.run_end(run, status="succeeded", plan_versions=2, stale_dropped=1)


def test_render_trace_draws_the_tree_with_key_attributes(
    telemetry: Telemetry, collector: SpanCollector
) -> None:
    small_run(telemetry)
    text = collector.render()
    assert DURATION.sub("", text).splitlines() == [
        "invoke_agent refunds  run=run-1  status=succeeded  versions=2  stale_dropped=1",
        "├─ plan planner  plan=1",
        "│  └─ chat m1  finish=end_turn  cache_read=5  tokens=15/2",
        "├─ invoke_agent billing  plan=1  step=s1  attempt=1  outcome=succeeded",
        "│  └─ execute_tool refund  call=call-1  outcome=ok",
        # A replan is the planner planning again; the reason is content: capture on only.
        "├─ plan planner  plan v1->v2",
        "├─ * report.stale_dropped  plan=2  report_plan=1  step=s2",
        "├─ execute_tool mail  call=call-2  ERROR TimeoutError",
        "└─ synthesize",
    ]
    # Every span line carries a duration in milliseconds.
    assert len(DURATION.findall(text)) == 8


def test_spans_whose_parent_is_missing_are_drawn_as_roots(
    telemetry: Telemetry, collector: SpanCollector
) -> None:
    small_run(telemetry)
    without_root = [span for span in collector.spans() if span.parent is not None]
    lines = DURATION.sub("", render_trace(without_root)).splitlines()
    roots = [line for line in lines if not line.startswith(("├", "└", "│", " "))]
    assert roots[:2] == [
        "plan planner  plan=1",
        "invoke_agent billing  plan=1  step=s1  attempt=1  outcome=succeeded",
    ]
    assert render_trace([]) == ""


def test_console_processor_prints_each_trace_when_its_root_ends(provider: TracerProvider) -> None:
    stream = io.StringIO()
    provider.add_span_processor(ConsoleTraceProcessor(stream))
    telemetry = Telemetry(provider, capture_content=False)
    with telemetry.run_span("t", "r1", "g"):
        with telemetry.phase_span("compress"):
            pass
        assert stream.getvalue() == ""  # nothing until the root ends
    first = stream.getvalue()
    with telemetry.run_span("t", "r2", "g"):
        pass
    lines = DURATION.sub("", stream.getvalue()).splitlines()
    assert DURATION.sub("", first).splitlines() == ["invoke_agent t  run=r1", "└─ compress"]
    assert lines[2:] == ["invoke_agent t  run=r2"]


def test_a_guardrail_line_says_which_guard_judged_what_and_how(
    telemetry: Telemetry, collector: SpanCollector
) -> None:
    attributes = {
        "regiment.guardrail.name": "eligibility_first",
        "regiment.guardrail.subject": "plan",
        "regiment.guardrail.outcome": "pass",
    }
    with (
        telemetry.run_span("refunds", "run-1", "goal"),
        telemetry.tracer.start_as_current_span("regiment.guardrail", attributes=attributes),
    ):
        pass
    assert DURATION.sub("", collector.render()).splitlines()[1:] == [
        "└─ regiment.guardrail  guard=eligibility_first  subject=plan  outcome=pass"
    ]


def test_the_console_shows_what_a_phase_concluded_and_why_a_step_was_cut(
    telemetry: Telemetry, collector: SpanCollector
) -> None:
    # The critique line said only `critique`, and a cancelled step not who cancelled it.
    from regiment.telemetry import record_cancellation

    with telemetry.run_span("t", "run-1", "goal"):
        with telemetry.phase_span("critique", attributes={"regiment.round": 1}) as critique:
            telemetry.recorder.critique(critique, passed=False, feedback="the tax is missing")
        with telemetry.phase_span("compress") as compress:
            telemetry.recorder.compressed(compress, before_tokens=1200, after_tokens=90)
        with telemetry.agent_span("w", step_id="s2", plan_version=1) as step:
            telemetry.recorder.step_outcome(step, "cancelled")
            record_cancellation(step, None, "plan v1 is being replaced")
    lines = DURATION.sub("", collector.render()).splitlines()
    assert lines[1:] == [
        "├─ critique  round=1  passed=false",
        "├─ compress  context=1200->90",
        "└─ invoke_agent w  plan=1  step=s2  outcome=cancelled  CANCELLED",
        "   └─ * cancelled  why='plan v1 is being replaced'",
    ]
