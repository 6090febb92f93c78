"""What the command says about its trace: where it went, or why it did not get there."""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping
from typing import TextIO, final
from urllib.parse import urlsplit

from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor

from regiment.telemetry import SpanCollector, TracingHandle, redact

__all__ = ("SDK_DISABLED", "RootTraceId", "collector_hint", "report_trace")

SDK_DISABLED = "regiment: no trace: OTEL_SDK_DISABLED=true turns tracing off; unset it to trace"
"""What a command says when the OpenTelemetry SDK's variable turned tracing off."""


@final
class RootTraceId(SpanProcessor):
    """Remembers the trace id of the last root span started: a failed run has no
    result to read it from, and its trace is worth finding all the more."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._trace_id: str | None = None

    @property
    def trace_id(self) -> str | None:
        """The trace id (32 hex digits) of the last root span, if one started."""
        with self._lock:
            return self._trace_id

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        if span.parent is None or span.parent.is_remote:
            with self._lock:
                self._trace_id = format(span.context.trace_id, "032x")

    def on_end(self, span: ReadableSpan) -> None:
        """Nothing to do when a span ends."""


def report_trace(
    trace_id: str | None,
    *,
    collector: SpanCollector | None,
    handle: TracingHandle | None,
    stderr: TextIO,
) -> None:
    """Print the span tree (console) and one line on the export (OTLP), naming the trace."""
    if trace_id is None and _sdk_disabled() and (collector is not None or handle is not None):
        # The OpenTelemetry SDK honours the variable whoever asked for a trace.
        print(SDK_DISABLED, file=stderr)
        return
    shown = trace_id or "(none started)"
    if collector is not None:
        tree = collector.render(int(trace_id, 16) if trace_id else None)
        print(f"\ntrace {shown}:\n{tree}", file=stderr)
    if handle is None or not handle.endpoint:
        return
    failure, endpoint = handle.export_failure, redact(handle.endpoint)  # no URL's password
    if failure is None:
        print(f"regiment: trace {shown} sent to {endpoint}", file=stderr)
    else:
        print(
            f"regiment: could not export trace {shown} to {endpoint}: {failure}; "
            + collector_hint(handle.endpoint),
            file=stderr,
        )


_DEFAULT = "http://localhost:4318/v1/traces"  # where configure_tracing sends by default


def collector_hint(endpoint: str, environ: Mapping[str, str] | None = None) -> str:
    """What to do when no collector took the spans sent to ``endpoint``: start one there,
    or name another through the variable that chose it (``environ``: ``os.environ``,
    which ``configure_tracing`` read), or trace nothing. An endpoint that is no URL
    (``localhost:4318``, without its scheme) is said to be that, not a collector's absence."""
    env = os.environ if environ is None else environ
    named = next((v for v in _VARIABLES if env.get(v, "").strip()), None)
    url = urlsplit(endpoint)
    if url.scheme not in ("http", "https") or not url.hostname:
        fix = f"set {named or _VARIABLES[1]} to one, such as http://localhost:4318"
        return f"that is no http:// or https:// URL with a host: {fix}; --trace none sends nothing"
    if named is None:
        change = f"point {_VARIABLES[1]} at yours (http://HOST:4318)"
    else:
        change = f"set {named} (which named it) to your collector's {_WHAT[named]}"
    start = (
        "start one there (Jaeger: docker run --rm -p 4318:4318 -p 16686:16686 "
        "jaegertracing/all-in-one:latest)"
        if endpoint == _DEFAULT
        else "start one there"
    )
    return f"is a collector listening? {start}, or {change}; --trace none sends nothing"


_VARIABLES = ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")  # as read
_WHAT = {_VARIABLES[0]: "URL", _VARIABLES[1]: "base URL"}


def _sdk_disabled() -> bool:
    return os.environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true"
