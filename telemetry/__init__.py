"""telemetry room: regiment's OpenTelemetry spans, trace context for envelopes, export setup.

The hierarchy opens every span through one ``Telemetry`` handle it is given
(and records outcomes on them through its ``recorder``);
``configure_tracing()`` is for applications and the CLI; ``render_trace`` and
``SpanCollector`` draw a finished run's tree without Jaeger. Attribute keys and
span names are in ``regiment.telemetry.semconv``.
"""

from importlib import import_module
from typing import TYPE_CHECKING

from regiment.telemetry import _genai as genai
from regiment.telemetry import _semconv as semconv
from regiment.telemetry._content import redact
from regiment.telemetry._held import HeldEnds
from regiment.telemetry._logs import LogExport, TraceContextHandler
from regiment.telemetry._metrics import RunMetrics
from regiment.telemetry._open_root import OpenCall, OpenRoot, OpenStep, parent_traceparent
from regiment.telemetry._propagation import (
    OTelPropagator,
    activated,
    context_headers,
    extract_context,
    headers_for,
    inject,
    joined_trace,
    trace_id_hex,
)
from regiment.telemetry._scope import error_type, leave_open, mark_error, record_cancellation
from regiment.telemetry._step_ids import chosen_child, current_span_id, step_ends, step_span_headers
from regiment.telemetry._telemetry import PhaseName, SpanScope, Telemetry

__all__ = (
    "ConsoleTraceProcessor",
    "HeldEnds",
    "LogExport",
    "OTelPropagator",
    "OpenCall",
    "OpenRoot",
    "OpenStep",
    "OtlpJsonFileExporter",
    "RunMetrics",
    "PhaseName",
    "SpanCollector",
    "SpanScope",
    "Telemetry",
    "TraceContextHandler",
    "TracingHandle",
    "activated",
    "chosen_child",
    "configure_tracing",
    "context_headers",
    "current_span_id",
    "error_type",
    "extract_context",
    "genai",
    "headers_for",
    "inject",
    "joined_trace",
    "leave_open",
    "mark_error",
    "parent_traceparent",
    "record_cancellation",
    "redact",
    "render_trace",
    "semconv",
    "spans_to_otlp_json",
    "step_ends",
    "step_span_headers",
    "trace_id_hex",
)

if TYPE_CHECKING:
    from regiment.telemetry._configure import TracingHandle, configure_tracing
    from regiment.telemetry._console import ConsoleTraceProcessor, SpanCollector, render_trace
    from regiment.telemetry._file_export import OtlpJsonFileExporter, spans_to_otlp_json

# These need the OpenTelemetry SDK (~50 ms to import); a run only needs the API,
# so they load on first use.
_LAZY = {
    "TracingHandle": "_configure",
    "configure_tracing": "_configure",
    "ConsoleTraceProcessor": "_console",
    "SpanCollector": "_console",
    "render_trace": "_console",
    "OtlpJsonFileExporter": "_file_export",
    "spans_to_otlp_json": "_file_export",
}


def __getattr__(name: str) -> object:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value
