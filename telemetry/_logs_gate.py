"""The log exporter ``configure_tracing(logs=True)`` uses, gated by the span export's watch.

Imported only when logs are exported: it loads the SDK's log support.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import final

from opentelemetry.sdk._logs import ReadableLogRecord
from opentelemetry.sdk._logs.export import LogRecordExporter, LogRecordExportResult

from regiment.telemetry._export_watch import ExportWatch

__all__ = ("GatedLogExporter",)


@final
class GatedLogExporter(LogRecordExporter):
    """Skips the export while closing once the span export found the collector missing,
    as the metrics do: no second wait for a collector known to be gone, and no record
    of the exporter's own failure on the terminal."""

    def __init__(self, exporter: LogRecordExporter, watch: ExportWatch, url: str) -> None:
        self._exporter = exporter
        self._watch = watch
        self._url = url

    def export(self, batch: Sequence[ReadableLogRecord]) -> LogRecordExportResult:
        if self._watch.closing_after_failure:
            return LogRecordExportResult.FAILURE
        with self._watch.exporting():
            result = self._exporter.export(batch)
        self._watch.outcome("logs", result is LogRecordExportResult.SUCCESS, self._url)
        return result

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return self._exporter.force_flush(timeout_millis)

    def shutdown(self) -> None:
        self._exporter.shutdown()  # type: ignore[no-untyped-call]
