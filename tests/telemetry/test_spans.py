"""The spans Telemetry opens: names, attributes, errors, cancellation, content."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import anyio
import pytest
from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.sampling import Decision, Sampler, SamplingResult
from opentelemetry.trace import Link, NoOpTracerProvider, SpanKind, StatusCode, TraceState
from opentelemetry.util.types import Attributes

from regiment.errors import ConfigError, ToolError
from regiment.telemetry import (
    SpanCollector,
    Telemetry,
    genai,
    semconv,
)

CONTENT_KEYS = {
    semconv.GEN_AI_INPUT_MESSAGES,
    semconv.GEN_AI_OUTPUT_MESSAGES,
    semconv.GEN_AI_SYSTEM_INSTRUCTIONS,
    semconv.GEN_AI_TOOL_CALL_ARGUMENTS,
    semconv.GEN_AI_TOOL_CALL_RESULT,
}


@dataclass(frozen=True)
class FakeUsage:
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0


def only(collector: SpanCollector, name: str) -> ReadableSpan:
    found = [span for span in collector.spans() if span.name == name]
    assert len(found) == 1, [span.name for span in collector.spans()]
    return found[0]


def attrs(span: ReadableSpan) -> dict[str, object]:
    return dict(span.attributes or {})


def chat_and_tool(telemetry: Telemetry) -> None:
    """One model call and one tool call, recording content wherever it may go."""
    with telemetry.chat_span("claude-x", semconv.PROVIDER_ANTHROPIC, agent_name="billing") as chat:
        telemetry.recorder.chat_input(
            chat,
            system="be brief",
            messages=[genai.chat_message("user", [genai.text_part("refund A-1")])],
        )
        telemetry.recorder.chat_response(
            chat,
            finish_reasons=("tool_use",),
            usage=FakeUsage(input_tokens=10, output_tokens=5, cache_read_tokens=100),
            response_model="claude-x-2025",
            response_id="msg_1",
        )
        telemetry.recorder.chat_output(
            chat,
            [
                genai.output_message(
                    [genai.tool_call_part("call_1", "issue_refund", {})], "tool_use"
                )
            ],
        )
    with telemetry.tool_span("issue_refund", "call_1", agent_name="billing") as tool:
        telemetry.recorder.tool_arguments(tool, {"order": "A-1", "amount": 20})
        telemetry.recorder.tool_result(tool, "refunded")
        telemetry.recorder.tool_outcome(tool, "ok")


def test_chat_span_follows_the_genai_conventions(
    telemetry: Telemetry, collector: SpanCollector
) -> None:
    chat_and_tool(telemetry)
    chat = only(collector, "chat claude-x")
    assert chat.kind is SpanKind.CLIENT
    assert attrs(chat) == {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "anthropic",
        "gen_ai.request.model": "claude-x",
        "gen_ai.agent.name": "billing",
        "gen_ai.response.finish_reasons": ("tool_use",),
        "gen_ai.response.model": "claude-x-2025",
        "gen_ai.response.id": "msg_1",
        # input includes the cached tokens, as the conventions ask
        "gen_ai.usage.input_tokens": 110,
        "gen_ai.usage.output_tokens": 5,
        "gen_ai.usage.cache_read.input_tokens": 100,
        "gen_ai.usage.cache_creation.input_tokens": 0,
    }


def test_tool_span_has_name_call_id_type_and_outcome(
    telemetry: Telemetry, collector: SpanCollector
) -> None:
    chat_and_tool(telemetry)
    tool = only(collector, "execute_tool issue_refund")
    assert attrs(tool) == {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "issue_refund",
        "gen_ai.tool.call.id": "call_1",
        "gen_ai.tool.type": "function",
        "gen_ai.agent.name": "billing",
        "regiment.tool.outcome": "ok",
    }
    assert tool.status.status_code is StatusCode.UNSET


def test_no_content_attribute_exists_by_default(
    telemetry: Telemetry, collector: SpanCollector
) -> None:
    assert not telemetry.capture_content
    chat_and_tool(telemetry)
    recorded = {key for span in collector.spans() for key in attrs(span)}
    assert not recorded & CONTENT_KEYS
    assert len(collector.spans()) == 2


def test_content_is_recorded_when_the_environment_opts_in(
    provider: TracerProvider, collector: SpanCollector, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "true")
    chat_and_tool(Telemetry(provider))
    chat = attrs(only(collector, "chat claude-x"))
    tool = attrs(only(collector, "execute_tool issue_refund"))
    assert chat["gen_ai.system_instructions"] == '[{"type":"text","content":"be brief"}]'
    assert chat["gen_ai.input.messages"] == (
        '[{"role":"user","parts":[{"type":"text","content":"refund A-1"}]}]'
    )
    assert chat["gen_ai.output.messages"] == (
        '[{"role":"assistant","parts":[{"type":"tool_call","id":"call_1",'
        '"name":"issue_refund","arguments":{}}],"finish_reason":"tool_call"}]'
    )
    assert tool["gen_ai.tool.call.arguments"] == '{"order":"A-1","amount":20}'
    assert tool["gen_ai.tool.call.result"] == "refunded"


def test_content_is_truncated_to_the_limit_and_secrets_are_redacted(
    provider: TracerProvider, collector: SpanCollector
) -> None:
    telemetry = Telemetry(provider, capture_content=True, content_limit=100)
    key = "sk-ant-api03-" + "A" * 40
    with telemetry.tool_span("fetch", "c1") as span:
        telemetry.recorder.tool_arguments(span, {"headers": f"x-api-key: {key}"})
        telemetry.recorder.tool_result(span, f"token Bearer abc.def-ghi then {key} " + "x" * 500)
    recorded = attrs(only(collector, "execute_tool fetch"))
    arguments = str(recorded["gen_ai.tool.call.arguments"])
    result = str(recorded["gen_ai.tool.call.result"])
    assert "sk-ant" not in arguments + result
    assert "abc.def" not in result
    assert "[REDACTED]" in arguments
    assert "Bearer [REDACTED]" in result
    assert len(result) == 100
    assert result.endswith("...[truncated]")


def test_a_bad_capture_variable_is_a_config_error(
    provider: TracerProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "maybe")
    with pytest.raises(ConfigError, match="CAPTURE_MESSAGE_CONTENT='maybe'"):
        Telemetry(provider)
    with pytest.raises(ConfigError, match="content_limit"):
        Telemetry(provider, capture_content=True, content_limit=0)


def test_an_escaping_exception_marks_the_span_error_with_its_type(
    telemetry: Telemetry, collector: SpanCollector
) -> None:
    with pytest.raises(ToolError), telemetry.tool_span("pay", "c9"):
        raise ToolError("card declined for key sk-ant-secret123456789")
    span = only(collector, "execute_tool pay")
    assert span.status.status_code is StatusCode.ERROR
    assert attrs(span)["error.type"] == "regiment.errors.ToolError"
    assert "sk-ant" not in (span.status.description or "")
    (event,) = span.events
    assert event.name == "exception"
    assert "sk-ant" not in str(dict(event.attributes or {}))


@pytest.mark.anyio
async def test_cancellation_is_recorded_but_is_not_an_error(
    telemetry: Telemetry, collector: SpanCollector
) -> None:
    started = anyio.Event()

    async def step() -> None:
        with telemetry.agent_span("billing", step_id="s1"):
            started.set()
            await anyio.sleep_forever()

    async with anyio.create_task_group() as tg:
        tg.start_soon(step)
        await started.wait()
        tg.cancel_scope.cancel()
    span = only(collector, "invoke_agent billing")
    assert span.status.status_code is StatusCode.UNSET
    assert "error.type" not in attrs(span)
    assert attrs(span)["regiment.cancelled"] is True
    assert [event.name for event in span.events] == ["regiment.cancelled"]


def test_run_plan_replan_verify_and_phases(telemetry: Telemetry, collector: SpanCollector) -> None:
    with telemetry.run_span("refunds", "run-1", "refund order A-1") as run:
        with telemetry.plan_span("planner", plan_version=1):
            pass
        with telemetry.verify_span("s1", check="amount_ok", plan_version=1) as verify:
            telemetry.recorder.check(verify, passed=False, detail="amount 30 > 20")
        with telemetry.replan_span(old_version=1, reason="check amount_ok failed") as replan:
            telemetry.recorder.replan(replan, new_version=2, steps=3)
        telemetry.recorder.stale_report(run, step_id="s2", report_version=1, current_version=2)
        with telemetry.phase_span("synthesize"):
            pass
        telemetry.recorder.run_end(
            run,
            status="succeeded",
            plan_versions=2,
            stale_dropped=1,
            usage=FakeUsage(input_tokens=7, output_tokens=3),
            model_calls=4,
        )
    root = only(collector, "invoke_agent refunds")
    assert root.parent is None
    assert attrs(root) == {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": "refunds",
        # no session: no gen_ai.conversation.id; no hosted agent: no gen_ai.agent.id
        "regiment.run.id": "run-1",
        "regiment.goal.length": len("refund order A-1"),
        "regiment.run.status": "succeeded",
        "regiment.plan.versions": 2,
        "regiment.reports.stale_dropped": 1,
        "regiment.usage.input_tokens": 7,
        "regiment.usage.output_tokens": 3,
        "regiment.usage.cache_read_tokens": 0,
        "regiment.usage.cache_write_tokens": 0,
        "regiment.usage.model_calls": 4,
    }
    (stale,) = root.events
    assert stale.name == "regiment.report.stale_dropped"
    assert dict(stale.attributes or {})["regiment.step.id"] == "s2"
    assert attrs(only(collector, "plan planner"))["gen_ai.operation.name"] == "plan"
    verify_span = only(collector, "verify")
    assert attrs(verify_span)["regiment.check.passed"] is False
    assert verify_span.status.status_code is StatusCode.UNSET  # a failed check is an outcome
    # A replan is planning (the conventions' plan operation); with no planner named, its
    # span is `plan`, as theirs is when no agent name is at hand.
    replan_attrs = attrs(only(collector, "plan"))
    assert replan_attrs["gen_ai.operation.name"] == "plan"
    assert replan_attrs["regiment.plan.replan"] is True
    assert "regiment.plan.replan" not in attrs(only(collector, "plan planner"))
    assert replan_attrs["regiment.plan.old_version"] == 1
    assert replan_attrs["regiment.plan.new_version"] == 2
    # the reason quotes user data: with capture off only its length is kept
    assert "regiment.replan.reason" not in replan_attrs
    assert replan_attrs["regiment.replan.reason_length"] == len("check amount_ok failed")
    root_id = root.context.span_id if root.context else None
    for name in ("plan planner", "verify", "plan", "synthesize"):
        parent = only(collector, name).parent
        assert parent is not None
        assert parent.span_id == root_id


def test_a_failed_step_outcome_marks_only_the_step(
    telemetry: Telemetry, collector: SpanCollector
) -> None:
    with telemetry.run_span("t", "r", "g"):
        with telemetry.agent_span("billing", step_id="s1", attempt=1) as first:
            telemetry.recorder.step_outcome(
                first, "failed", error_type="timeout", description="too slow"
            )
        with telemetry.agent_span("billing", step_id="s1", attempt=2) as second:
            telemetry.recorder.step_outcome(second, "succeeded")
    failed, succeeded = (span for span in collector.spans() if span.name == "invoke_agent billing")
    assert failed.status.status_code is StatusCode.ERROR
    assert attrs(failed)["error.type"] == "timeout"
    assert attrs(succeeded)["regiment.step.outcome"] == "succeeded"
    assert only(collector, "invoke_agent t").status.status_code is StatusCode.UNSET


def test_tracing_off_is_cheap_and_records_nothing() -> None:
    telemetry = Telemetry(NoOpTracerProvider(), capture_content=True)

    class Exploding:
        """Formatting it would fail the test: nothing may be serialised when not recording."""

        def __repr__(self) -> str:
            raise AssertionError("content was formatted although the span is not recording")

    with telemetry.chat_span("m", "anthropic") as span:
        assert not span.is_recording()
        telemetry.recorder.tool_arguments(span, Exploding())
        telemetry.recorder.tool_result(span, Exploding())
        telemetry.recorder.chat_response(span, finish_reasons=("end_turn",), usage=FakeUsage())
    assert telemetry.inject() == {}


def test_without_a_real_provider_no_span_is_built() -> None:
    from opentelemetry import trace as otel_trace

    telemetry = Telemetry(NoOpTracerProvider())
    assert telemetry.tracing is False
    scopes = [
        telemetry.run_span("t", "run-1", "goal"),
        telemetry.plan_span("planner"),
        telemetry.agent_span(
            "w", parent_headers={"traceparent": "00-" + "1" * 32 + "-" + "2" * 16 + "-01"}
        ),
        telemetry.chat_span("m", "scripted"),
        telemetry.tool_span("lookup", "call_1"),
    ]
    for scope in scopes:
        with scope as span:
            assert span is otel_trace.INVALID_SPAN
            assert not span.is_recording()


class _SeenAtStart(Sampler):
    """Keeps every span and notes the attributes it was started with."""

    def __init__(self) -> None:
        self.started: dict[str, dict[str, object]] = {}

    def should_sample(
        self,
        parent_context: Context | None,
        trace_id: int,
        name: str,
        kind: SpanKind | None = None,
        attributes: Attributes = None,
        links: Sequence[Link] | None = None,
        trace_state: TraceState | None = None,
    ) -> SamplingResult:
        self.started[name] = dict(attributes or {})
        return SamplingResult(Decision.RECORD_AND_SAMPLE, attributes)

    def get_description(self) -> str:
        return "seen at start"


def test_chat_span_extra_attributes_are_start_attributes() -> None:
    # The applied request settings go in with the span's start (one dict, no second
    # call on the span), so a sampler sees them too.
    sampler = _SeenAtStart()
    telemetry = Telemetry(TracerProvider(sampler=sampler))
    extra = {semconv.GEN_AI_REQUEST_MAX_TOKENS: 300, semconv.GEN_AI_REQUEST_TOP_P: 0.5}
    with telemetry.chat_span("m", "scripted", agent_name="w", attributes=extra) as span:
        assert span.is_recording()
    assert sampler.started["chat m"] == {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "scripted",
        "gen_ai.request.model": "m",
        "gen_ai.agent.name": "w",
        "gen_ai.request.max_tokens": 300,
        "gen_ai.request.top_p": 0.5,
    }


def test_a_span_left_open_on_exit_ends_when_told(
    telemetry: Telemetry, collector: SpanCollector
) -> None:
    with telemetry.replan_span(old_version=1, reason="why", end_on_exit=False) as span:
        pass
    assert collector.spans() == ()  # not ended yet, and no longer current
    assert not trace.get_current_span().get_span_context().is_valid
    telemetry.recorder.replan(span, new_version=2, steps=4)
    span.end()
    (ended,) = collector.spans()
    assert ended.attributes is not None
    assert ended.attributes["regiment.plan.steps"] == 4
