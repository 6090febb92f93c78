"""configure_tracing(): real OTLP/HTTP export to a loopback receiver, env variables, refusal."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from opentelemetry.sdk.trace import TracerProvider as SdkTracerProvider
from opentelemetry.trace import NoOpTracerProvider, ProxyTracerProvider

from regiment.errors import ConfigError
from regiment.telemetry import Telemetry, configure_tracing, trace_id_hex
from regiment.telemetry._configure import refuse_if_installed, resolve_traces_endpoint

from .otlp_receiver import OtlpReceiver, ReceivedSpan

OTEL_VARIABLES = (
    "OTEL_SDK_DISABLED",
    "OTEL_SERVICE_NAME",
    "OTEL_RESOURCE_ATTRIBUTES",
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    "OTEL_EXPORTER_OTLP_COMPRESSION",
    "OTEL_EXPORTER_OTLP_TRACES_COMPRESSION",
    "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT",
)


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in OTEL_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")


def one_run(telemetry: Telemetry) -> None:
    """A small run: root, plan with a chat inside, a worker step parented by headers."""
    with telemetry.run_span("refunds", "run-1", "refund A-1") as run:
        with (
            telemetry.plan_span("planner", plan_version=1),
            telemetry.chat_span("claude-x", "anthropic", agent_name="planner") as chat,
        ):
            telemetry.recorder.chat_response(chat, finish_reasons=("end_turn",))
        headers = telemetry.headers_for(run)
    with (
        telemetry.agent_span("billing", parent_headers=headers, step_id="s1"),
        telemetry.tool_span("issue_refund", "call-1"),
    ):
        pass


def named(spans: tuple[ReceivedSpan, ...], name: str) -> ReceivedSpan:
    (span,) = [span for span in spans if span.name == name]
    return span


def test_spans_arrive_over_otlp_http_with_service_name_and_parent_links() -> None:
    with OtlpReceiver() as receiver:
        handle = configure_tracing("refund-app", endpoint=receiver.endpoint, set_global=False)
        assert handle.endpoint == receiver.endpoint
        one_run(Telemetry(handle.provider))
        handle.shutdown()  # flushes the batch processor; the POST is answered by then
        spans = receiver.spans()

    assert len(spans) == 5
    assert {span.trace_id for span in spans} == {named(spans, "invoke_agent refunds").trace_id}
    assert {span.resource["service.name"] for span in spans} == {"refund-app"}
    assert {span.scope for span in spans} == {"regiment"}
    root = named(spans, "invoke_agent refunds")
    plan = named(spans, "plan planner")
    worker = named(spans, "invoke_agent billing")
    assert root.parent_span_id is None
    assert plan.parent_span_id == root.span_id
    assert named(spans, "chat claude-x").parent_span_id == plan.span_id
    assert worker.parent_span_id == root.span_id
    assert named(spans, "execute_tool issue_refund").parent_span_id == worker.span_id
    assert root.attributes["regiment.run.id"] == "run-1"
    assert named(spans, "chat claude-x").attributes["gen_ai.response.finish_reasons"] == (
        "end_turn",
    )


def test_the_standard_variables_choose_endpoint_service_name_and_compression(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with OtlpReceiver() as receiver:
        base = receiver.endpoint.removesuffix("/v1/traces")
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", base)
        monkeypatch.setenv("OTEL_SERVICE_NAME", "from-env")
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_COMPRESSION", "gzip")
        with configure_tracing(set_global=False) as handle:
            assert handle.endpoint == receiver.endpoint
            assert handle.service_name == "from-env"
            one_run(Telemetry(handle.provider))
        spans = receiver.spans()
        assert set(receiver.encodings()) == {"gzip"}
    assert len(spans) == 5
    assert {span.resource["service.name"] for span in spans} == {"from-env"}


def test_endpoint_precedence() -> None:
    env = {
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://traces:1/custom",
        "OTEL_EXPORTER_OTLP_ENDPOINT": "http://base:2/",
    }
    assert resolve_traces_endpoint("http://arg:3", env) == "http://arg:3/v1/traces"
    assert resolve_traces_endpoint("http://arg:3/v1/traces", env) == "http://arg:3/v1/traces"
    assert resolve_traces_endpoint(None, env) == "http://traces:1/custom"
    del env["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"]
    assert resolve_traces_endpoint(None, env) == "http://base:2/v1/traces"
    assert resolve_traces_endpoint(None, {}) == "http://localhost:4318/v1/traces"


def test_sdk_disabled_gives_a_no_op_provider_and_exports_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OTEL_SDK_DISABLED", "true")
    with OtlpReceiver() as receiver:
        # set_global=True on purpose: a disabled SDK must not touch the global provider.
        handle = configure_tracing(endpoint=receiver.endpoint)
        assert not handle.enabled
        assert isinstance(handle.provider, NoOpTracerProvider)
        telemetry = Telemetry(handle.provider)
        with telemetry.run_span("t", "r", "g") as span:
            assert not span.is_recording()
            assert trace_id_hex(span) is None
        assert handle.force_flush()
        handle.shutdown()
        assert receiver.spans() == ()


def test_refuses_to_replace_a_provider_someone_else_installed() -> None:
    refuse_if_installed(ProxyTracerProvider())  # OpenTelemetry's placeholder: fine
    foreign = SdkTracerProvider(shutdown_on_exit=False)
    with pytest.raises(ConfigError, match=r"already installed .*set_global=False"):
        refuse_if_installed(foreign)
    with pytest.raises(ConfigError, match="NoOpTracerProvider"):
        refuse_if_installed(NoOpTracerProvider())


def run_python(code: str) -> str:
    """Run ``code`` in a fresh interpreter (the global provider can be set once per process)."""
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=50,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_in_a_fresh_process_it_installs_once_then_refuses() -> None:
    out = run_python(
        """
        from opentelemetry import trace
        from regiment.errors import ConfigError
        from regiment.telemetry import configure_tracing

        handle = configure_tracing(otlp=False)
        print("installed", trace.get_tracer_provider() is handle.provider)
        try:
            configure_tracing(otlp=False)
        except ConfigError as exc:
            print("refused", "already installed" in str(exc))
        print("kept", trace.get_tracer_provider() is handle.provider)
        handle.shutdown()
        """
    )
    assert out.split() == ["installed", "True", "refused", "True", "kept", "True"]


def test_in_a_fresh_process_it_leaves_a_foreign_provider_alone() -> None:
    out = run_python(
        """
        from opentelemetry import trace
        from opentelemetry.sdk.trace import TracerProvider
        from regiment.errors import ConfigError
        from regiment.telemetry import configure_tracing

        theirs = TracerProvider()
        trace.set_tracer_provider(theirs)
        try:
            configure_tracing()
        except ConfigError as exc:
            print("refused")
        print("kept", trace.get_tracer_provider() is theirs)
        """
    )
    assert out.split() == ["refused", "kept", "True"]


def test_spans_can_be_written_to_a_file_as_otlp_json_lines(tmp_path: Path) -> None:
    path = tmp_path / "spans.jsonl"
    with configure_tracing("file-app", otlp=False, file=path, set_global=False) as handle:
        assert handle.endpoint is None
        one_run(Telemetry(handle.provider))
    lines = path.read_text().splitlines()
    assert lines
    spans = []
    for line in lines:
        request = json.loads(line)
        for resource_spans in request["resourceSpans"]:
            attributes = resource_spans["resource"]["attributes"]
            assert {"key": "service.name", "value": {"stringValue": "file-app"}} in attributes
            for scope_spans in resource_spans["scopeSpans"]:
                spans.extend(scope_spans["spans"])
    by_name = {span["name"]: span for span in spans}
    assert len(by_name) == 5
    root, plan = by_name["invoke_agent refunds"], by_name["plan planner"]
    assert len(root["traceId"]) == 32
    assert int(root["traceId"], 16)
    assert len(root["spanId"]) == 16
    assert "parentSpanId" not in root
    assert plan["parentSpanId"] == root["spanId"]
    assert by_name["invoke_agent billing"]["parentSpanId"] == root["spanId"]


def test_an_unwritable_trace_file_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot open the trace file"):
        configure_tracing(otlp=False, file=tmp_path / "missing-dir" / "x.jsonl", set_global=False)
