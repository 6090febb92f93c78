"""Knowing whether spans left: an exporter wrapper that keeps the first failure's reason.

The OTLP exporter never raises; it logs (a warning per retry, then an error)
and returns ``FAILURE``. ``ExportWatch`` turns that into one reason a program
can print, and, once the provider is closing, stops retrying a collector that
is not there so the exit is not held up.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import final

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

__all__ = ("ExportWatch",)

# The OTLP exporters log through loggers under this name.
_EXPORTER_LOGGER = "opentelemetry.exporter.otlp"
_ERRNO = re.compile(r"\[Errno -?\d+\][^'\")]*")
_REASON_LIMIT = 200
# What the exporter's last word means when no attempt logged a reason of its own:
# the deadline passed, whether the collector never answered or kept refusing.
_NO_ANSWER = (
    "no export went through within the export timeout (is the collector up? if it is "
    "slow, raise export_timeout= or OTEL_EXPORTER_OTLP_TIMEOUT)"
)


@final
class ExportWatch(SpanExporter):
    """Wraps ``exporter``: counts the spans it exported and keeps why an export failed.

    While it is attached, the exporter's log records are taken by this watch
    (they become :attr:`failure`) instead of reaching Python's last-resort
    handler, so a missing collector prints nothing by itself. An application
    that configured logging still gets the records through its own handlers.

    Args:
        exporter: the exporter that does the sending.
    """

    def __init__(self, exporter: SpanExporter) -> None:
        self._exporter = exporter
        self._lock = threading.Lock()
        self._failure: str | None = None
        self._closing = False
        self._shut = False
        self._holds = 0
        self.exported = 0
        self._handler = _ReasonHandler()
        logging.getLogger(_EXPORTER_LOGGER).addHandler(self._handler)

    @property
    def failure(self) -> str | None:
        """Why the first failed export failed, or ``None`` while every export succeeded."""
        with self._lock:
            return self._failure

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        """Export through the wrapped exporter; after a failure while closing, drop fast."""
        with self._lock:
            if self._closing and self._failure is not None:
                return SpanExportResult.FAILURE
        result = self._exporter.export(spans)
        with self._lock:
            if result is SpanExportResult.SUCCESS:
                self.exported += len(spans)
            elif self._failure is None:
                self._failure = self._handler.reason() or "the exporter reported a failure"
        return result

    @property
    def closing_after_failure(self) -> bool:
        """Whether the provider is closing and an export already failed (try no more)."""
        with self._lock:
            return self._closing and self._failure is not None

    def closing(self) -> None:
        """The provider is shutting down: after one failure, do not try the rest."""
        with self._lock:
            self._closing = True

    def shutdown(self) -> None:
        """Shut the wrapped exporter down and stop taking its log records (unless held)."""
        self.closing()
        try:
            self._exporter.shutdown()
        finally:
            with self._lock:
                self._shut = True
            self._detach_if_free()

    @contextmanager
    def held(self) -> Iterator[None]:
        """Keep taking the OTLP exporters' log records until the block ends, even past
        :meth:`shutdown`: the metric and log exports that close after the spans log
        their failures through the same loggers."""
        with self._lock:
            self._holds += 1
        try:
            yield
        finally:
            with self._lock:
                self._holds -= 1
            self._detach_if_free()

    def _detach_if_free(self) -> None:
        with self._lock:
            free = self._shut and self._holds == 0
        if free:
            logging.getLogger(_EXPORTER_LOGGER).removeHandler(self._handler)

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        """Flush the wrapped exporter."""
        return self._exporter.force_flush(timeout_millis)


class _ReasonHandler(logging.Handler):
    """Keeps the most telling reason out of the exporter's log records."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self._reason: str | None = None

    def emit(self, record: logging.LogRecord) -> None:
        found = _reason_of(record)
        if found is not None and self._reason is None:
            self._reason = found

    def reason(self) -> str | None:
        found, self._reason = self._reason, None
        return found


def _reason_of(record: logging.LogRecord) -> str | None:
    args = record.args if isinstance(record.args, tuple) else ()
    for arg in args:
        if isinstance(arg, BaseException):
            return _short(arg)
    message = record.getMessage()
    if "due to timeout" in message:  # after a retry's warning, that one is kept instead
        return _NO_ANSWER
    return message[:_REASON_LIMIT]


def _short(error: BaseException) -> str:
    text = str(error)
    errno = _ERRNO.search(text)
    if errno is not None:  # requests wraps "connection refused" in three layers
        return errno.group(0).strip()
    return f"{type(error).__name__}: {text}"[:_REASON_LIMIT]
