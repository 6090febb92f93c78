"""telemetry room: regiment's OpenTelemetry spans, trace context for envelopes, export setup.

The hierarchy opens every span through one ``Telemetry`` handle it is given
(and records outcomes on them through its ``recorder``);
``configure_tracing()`` is for applications and the CLI; ``render_trace`` and
``SpanCollector`` draw a finished run's tree without Jaeger. Attribute keys and
span names are in ``regiment.telemetry.semconv``.
"""

from regiment.telemetry import _genai as genai
from regiment.telemetry import _semconv as semconv
from regiment.telemetry._configure import TracingHandle, configure_tracing
from regiment.telemetry._console import ConsoleTraceProcessor, SpanCollector, render_trace
from regiment.telemetry._content import redact
from regiment.telemetry._file_export import OtlpJsonFileExporter, spans_to_otlp_json
from regiment.telemetry._logs import LogExport, TraceContextHandler
from regiment.telemetry._metrics import RunMetrics
from regiment.telemetry._propagation import (
    OTelPropagator,
    extract_context,
    headers_for,
    inject,
    trace_id_hex,
)
from regiment.telemetry._scope import error_type, mark_error
from regiment.telemetry._telemetry import PhaseName, SpanScope, Telemetry

__all__ = (
    "ConsoleTraceProcessor",
    "LogExport",
    "OTelPropagator",
    "OtlpJsonFileExporter",
    "RunMetrics",
    "PhaseName",
    "SpanCollector",
    "SpanScope",
    "Telemetry",
    "TraceContextHandler",
    "TracingHandle",
    "configure_tracing",
    "error_type",
    "extract_context",
    "genai",
    "headers_for",
    "inject",
    "mark_error",
    "redact",
    "render_trace",
    "semconv",
    "spans_to_otlp_json",
    "trace_id_hex",
)
