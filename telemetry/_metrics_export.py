"""The meter provider ``configure_tracing`` sets up next to its tracer provider.

Metrics go over OTLP/HTTP to the same collector as the spans (``/v1/metrics``).
A collector that the span export already found missing is not tried again for
metrics while closing, so a missing collector still costs one export timeout.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, final

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import (
    MetricExporter,
    MetricExportResult,
    MetricsData,
    PeriodicExportingMetricReader,
)
from opentelemetry.sdk.resources import Resource

from regiment.telemetry._export_watch import ExportWatch

__all__ = ("otlp_meter_provider", "resolve_metrics_endpoint")

_METRICS_PATH = "/v1/metrics"
_TRACES_PATH = "/v1/traces"
# Long runs get a point a minute (the SDK's default); shutdown exports the last one.
_INTERVAL_MILLIS = 60_000


def resolve_metrics_endpoint(traces_url: str, environ: Mapping[str, str]) -> str:
    """The OTLP/HTTP metrics URL: ``OTEL_EXPORTER_OTLP_METRICS_ENDPOINT`` (as is), else
    the traces URL with ``/v1/metrics`` in place of ``/v1/traces``."""
    explicit = environ.get("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "").strip()
    if explicit:
        return explicit
    base = traces_url.rstrip("/")
    if base.endswith(_TRACES_PATH):
        base = base[: -len(_TRACES_PATH)]
    return base + _METRICS_PATH


def otlp_meter_provider(
    url: str, timeout: float | None, resource: Resource, watch: ExportWatch | None
) -> MeterProvider:
    """A meter provider exporting to ``url``; ``watch`` (the span export's) gates closing."""
    # Imported only when exporting, like the span exporter.
    from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter

    exporter: MetricExporter = OTLPMetricExporter(endpoint=url, timeout=timeout)
    if watch is not None:
        exporter = _Gated(exporter, watch, url)
    reader = PeriodicExportingMetricReader(exporter, export_interval_millis=_INTERVAL_MILLIS)
    # shut down by the TracingHandle (at exit too), after the spans
    return MeterProvider(resource=resource, metric_readers=[reader], shutdown_on_exit=False)


@final
class _Gated(MetricExporter):
    """Skips the export while closing once the span export found the collector missing;
    tells the watch how each export went (it logs an outage once)."""

    def __init__(self, exporter: MetricExporter, watch: ExportWatch, url: str) -> None:
        super().__init__(
            preferred_temporality=exporter._preferred_temporality,
            preferred_aggregation=exporter._preferred_aggregation,
        )
        self._exporter = exporter
        self._watch = watch
        self._url = url

    def export(
        self, metrics_data: MetricsData, timeout_millis: float = 10_000, **kwargs: Any
    ) -> MetricExportResult:
        if self._watch.closing_after_failure:
            return MetricExportResult.FAILURE
        with self._watch.exporting():
            result = self._exporter.export(metrics_data, timeout_millis=timeout_millis, **kwargs)
        self._watch.outcome("metrics", result is MetricExportResult.SUCCESS, self._url)
        return result

    def force_flush(self, timeout_millis: float = 10_000) -> bool:
        return self._exporter.force_flush(timeout_millis=timeout_millis)

    def shutdown(self, timeout_millis: float = 30_000, **kwargs: Any) -> None:
        self._exporter.shutdown(timeout_millis=timeout_millis, **kwargs)
