"""``configure_tracing()``: one call that sets up export for an application or the CLI."""

from __future__ import annotations

import atexit
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import final

from opentelemetry import metrics, trace
from opentelemetry.sdk.metrics import MeterProvider as SdkMeterProvider
from opentelemetry.sdk.resources import SERVICE_NAME, Resource
from opentelemetry.sdk.trace import TracerProvider as SdkTracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter
from opentelemetry.trace import NoOpTracerProvider, ProxyTracerProvider, TracerProvider

from regiment.errors import ConfigError
from regiment.telemetry._console import ConsoleTraceProcessor
from regiment.telemetry._export_watch import ExportWatch
from regiment.telemetry._file_export import OtlpJsonFileExporter
from regiment.telemetry._headers import check_header_variables
from regiment.telemetry._logs import LogExport, resolve_logs_endpoint
from regiment.telemetry._metrics_export import otlp_meter_provider, resolve_metrics_endpoint

__all__ = ("TracingHandle", "configure_tracing", "resolve_traces_endpoint")

DEFAULT_ENDPOINT = "http://localhost:4318"
_TRACES_PATH = "/v1/traces"
_DEFAULT_SERVICE = "regiment"
DEFAULT_EXPORT_TIMEOUT = 2.0
_TIMEOUT_VARIABLES = ("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "OTEL_EXPORTER_OTLP_TIMEOUT")


@final
class TracingHandle:
    """What ``configure_tracing`` set up; use it to flush and shut down.

    Shutting down flushes every pending span. The provider also flushes at
    interpreter exit by itself, so calling :meth:`shutdown` is only needed to
    flush earlier (``with configure_tracing(): ...`` does it on leaving).

    Attributes:
        provider: the tracer provider (a no-op one when the SDK is disabled);
            pass it to ``Telemetry`` when it was not made global.
        meter_provider: the meter provider exporting metrics to the same
            collector (``None`` without OTLP export or with the SDK disabled);
            pass it to ``Telemetry(meter_provider=...)`` when it was not made global.
        logs: the OTLP export of the ``regiment`` loggers' records
            (``configure_tracing(logs=True)``), else ``None``.
        enabled: ``False`` when ``OTEL_SDK_DISABLED`` turned tracing off.
        service_name: the ``service.name`` spans are exported with.
        endpoint: the OTLP/HTTP traces URL, or ``None`` when not exporting over OTLP.
        watch: what knows whether the OTLP export worked (``None`` without OTLP).
    """

    def __init__(
        self,
        provider: TracerProvider,
        *,
        enabled: bool,
        service_name: str,
        endpoint: str | None,
        watch: ExportWatch | None = None,
        meter_provider: SdkMeterProvider | None = None,
    ) -> None:
        self.provider = provider
        self.meter_provider = meter_provider
        self.logs: LogExport | None = None
        self.enabled = enabled
        self.service_name = service_name
        self.endpoint = endpoint
        self.watch = watch
        self._shut = False

    @property
    def export_failure(self) -> str | None:
        """Why exporting to :attr:`endpoint` failed, or ``None`` if nothing failed (yet)."""
        return None if self.watch is None else self.watch.failure

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        """Export every finished span now; ``False`` if that did not finish in time."""
        flushed = True
        if isinstance(self.provider, SdkTracerProvider):
            flushed = self.provider.force_flush(timeout_millis)
        if self.meter_provider is not None:
            flushed = self.meter_provider.force_flush(timeout_millis) and flushed
        if self.logs is not None:
            flushed = self.logs.force_flush(timeout_millis) and flushed
        return flushed

    def shutdown(self) -> None:
        """Flush and stop exporting. Spans started afterwards are dropped.

        With no collector listening this returns after about one export timeout:
        once an export failed, the remaining batches are not tried.
        """
        if self._shut:
            return
        self._shut = True
        if self.watch is None:
            self._shutdown()
            return
        self.watch.closing()
        with self.watch.held():  # their failures are the spans', said once
            self._shutdown()

    def _shutdown(self) -> None:
        if isinstance(self.provider, SdkTracerProvider):
            self.provider.shutdown()
        if self.meter_provider is not None:  # exports the last metric points
            self.meter_provider.shutdown()
        if self.logs is not None:
            self.logs.shutdown()

    def __enter__(self) -> TracingHandle:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.shutdown()


def configure_tracing(
    service_name: str | None = None,
    *,
    endpoint: str | None = None,
    otlp: bool = True,
    console: bool = False,
    file: str | Path | None = None,
    exporters: Sequence[SpanExporter] = (),
    set_global: bool = True,
    export_timeout: float | None = None,
    logs: bool = False,
) -> TracingHandle:
    """Set up a tracer provider that exports regiment's spans.

    Standard variables are honoured: ``OTEL_SDK_DISABLED=true`` turns it all
    off (a no-op provider, nothing installed); ``OTEL_SERVICE_NAME``,
    ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` and ``OTEL_EXPORTER_OTLP_ENDPOINT``
    fill in what the arguments leave out; the exporter reads its own
    ``OTEL_EXPORTER_OTLP_*`` headers, timeout and compression variables.

    Args:
        service_name: ``service.name``; ``None`` means ``OTEL_SERVICE_NAME``, else ``"regiment"``.
        endpoint: the OTLP/HTTP collector, as a base URL (``http://host:4318``,
            ``/v1/traces`` is added) or the full traces URL. ``None`` reads the
            variables above, else ``http://localhost:4318`` (Jaeger's default).
        otlp: export over OTLP/HTTP (turn off for console or file output only).
        console: print each run's span tree to stderr when the run ends.
        file: also append spans to this file as OTLP JSON lines.
        exporters: more exporters (each behind its own batch processor).
        set_global: install the provider as OpenTelemetry's global one, so
            ``Telemetry()`` and other libraries find it.
        export_timeout: seconds one OTLP export (retries included) may take;
            ``None``: ``OTEL_EXPORTER_OTLP[_TRACES]_TIMEOUT``, else 2 seconds.
        logs: also export the ``regiment`` loggers' records over OTLP (``/v1/logs``),
            secrets in their messages redacted.

    Returns:
        A handle with the providers; it flushes on ``shutdown()``, ``with`` exit, and at exit.

    Raises:
        ConfigError: another global tracer provider is installed (``set_global``), or
            ``export_timeout`` is not positive, or an OTLP headers entry is not name=value.
    """
    environ = os.environ
    name = service_name or environ.get("OTEL_SERVICE_NAME") or _DEFAULT_SERVICE
    url = resolve_traces_endpoint(endpoint, environ) if otlp else None
    if _sdk_disabled(environ):
        return TracingHandle(NoOpTracerProvider(), enabled=False, service_name=name, endpoint=None)
    if set_global:
        refuse_if_installed(trace.get_tracer_provider())
    watch = None if url is None else _watched(url, export_timeout, environ)
    provider = _tracer_provider(name, _exporters(watch, file, exporters), console=console)
    meters = _meters(url, export_timeout, environ, provider.resource, watch)
    if set_global:
        _install(provider, meters)
    handle = TracingHandle(provider, enabled=True, service_name=name, endpoint=url, watch=watch)
    handle.meter_provider = meters
    handle.logs = _log_export(logs, url, export_timeout, environ, provider.resource, watch)
    atexit.register(handle.shutdown)  # not each provider's: a missing collector, one timeout
    return handle


def _log_export(
    logs: bool,
    url: str | None,
    timeout: float | None,
    environ: Mapping[str, str],
    resource: Resource,
    watch: ExportWatch | None,
) -> LogExport | None:
    """Log records go where the spans go: only with OTLP export, when asked."""
    if not logs or url is None:
        return None
    url = resolve_logs_endpoint(url, environ)
    return LogExport(url, _timeout(timeout, environ), resource, watch)


def _tracer_provider(
    name: str, exporters: Sequence[SpanExporter], *, console: bool
) -> SdkTracerProvider:
    resource = Resource.create({SERVICE_NAME: name})
    provider = SdkTracerProvider(resource=resource, shutdown_on_exit=False)
    for exporter in exporters:
        provider.add_span_processor(BatchSpanProcessor(exporter))
    if console:
        provider.add_span_processor(ConsoleTraceProcessor())
    return provider


def _meters(
    url: str | None,
    timeout: float | None,
    environ: Mapping[str, str],
    resource: Resource,
    watch: ExportWatch | None,
) -> SdkMeterProvider | None:
    """Metrics go where the spans go: only with OTLP export."""
    if url is None:
        return None
    metrics_url = resolve_metrics_endpoint(url, environ)
    return otlp_meter_provider(metrics_url, _timeout(timeout, environ), resource, watch)


def _install(provider: SdkTracerProvider, meters: SdkMeterProvider | None) -> None:
    trace.set_tracer_provider(provider)
    if trace.get_tracer_provider() is not provider:  # lost a race with another thread
        provider.shutdown()
        if meters is not None:
            meters.shutdown()
        refuse_if_installed(trace.get_tracer_provider())
    if meters is not None:
        metrics.set_meter_provider(meters)


def _timeout(timeout: float | None, environ: Mapping[str, str]) -> float | None:
    """The export timeout to give an exporter (``None``: it reads the variables itself)."""
    if timeout is not None and timeout <= 0:
        raise ConfigError(f"export_timeout must be a positive number of seconds, got {timeout}")
    if timeout is None and not any(environ.get(v, "").strip() for v in _TIMEOUT_VARIABLES):
        timeout = DEFAULT_EXPORT_TIMEOUT
    return timeout


def _watched(url: str, timeout: float | None, environ: Mapping[str, str]) -> ExportWatch:
    """The OTLP span exporter to ``url``, watched; its session's responses are heard, so
    a failure names the collector's error answer (a 503, say). The first exporter made:
    the headers variables are checked before one reads (and logs) a malformed entry."""
    check_header_variables(environ)
    timeout = _timeout(timeout, environ)
    # Imported only when exporting: it loads protobuf and requests (most of a second).
    import requests
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    # A credential provider named in the environment makes the exporter's own session.
    own = not any(environ.get(v, "").strip() for v in _CREDENTIAL_VARIABLES)
    session = requests.Session() if own else None
    watch = ExportWatch(OTLPSpanExporter(endpoint=url, timeout=timeout, session=session), url)
    if session is not None:
        session.hooks["response"].append(watch.heard)
    return watch


_CREDENTIAL_VARIABLES = (
    "OTEL_PYTHON_EXPORTER_OTLP_HTTP_CREDENTIAL_PROVIDER",
    "OTEL_PYTHON_EXPORTER_OTLP_HTTP_TRACES_CREDENTIAL_PROVIDER",
)


def _exporters(
    watch: ExportWatch | None, file: str | Path | None, extra: Sequence[SpanExporter]
) -> list[SpanExporter]:
    found: list[SpanExporter] = [] if watch is None else [watch]
    if file is not None:
        found.append(OtlpJsonFileExporter(file))
    found.extend(extra)
    return found


def resolve_traces_endpoint(endpoint: str | None, environ: Mapping[str, str]) -> str:
    """The OTLP/HTTP traces URL ``configure_tracing`` exports to.

    Precedence: ``endpoint`` (``/v1/traces`` added to a base URL), then
    ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` (used as is), then
    ``OTEL_EXPORTER_OTLP_ENDPOINT`` (``/v1/traces`` added), then
    ``http://localhost:4318/v1/traces``.
    """
    if endpoint:
        return endpoint if endpoint.rstrip("/").endswith(_TRACES_PATH) else _join(endpoint)
    traces = environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "").strip()
    if traces:
        return traces
    return _join(environ.get("OTEL_EXPORTER_OTLP_ENDPOINT", "").strip() or DEFAULT_ENDPOINT)


def _join(base: str) -> str:
    return base.rstrip("/") + _TRACES_PATH


def _sdk_disabled(environ: Mapping[str, str]) -> bool:
    return environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true"


def refuse_if_installed(current: TracerProvider) -> None:
    """Raise unless ``current`` (the global provider) is still OpenTelemetry's placeholder.

    Raises:
        ConfigError: someone (the application, an auto-instrumentation agent,
            or an earlier ``configure_tracing``) already installed a provider.
    """
    if isinstance(current, ProxyTracerProvider):
        return
    kind = f"{type(current).__module__}.{type(current).__qualname__}"
    raise ConfigError(
        f"a global OpenTelemetry tracer provider is already installed ({kind}) and "
        "configure_tracing() will not replace it (OpenTelemetry allows one per process). "
        "Either pass that provider to Telemetry(tracer_provider=...) and configure its "
        "exporters yourself, or call configure_tracing(set_global=False) and pass the "
        "returned handle's .provider to Telemetry"
    )
