"""Log records that say which trace and span they were logged in.

Every record of the ``regiment`` logger and its children gets ``trace_id`` and
``span_id`` (lower-case hex of the span current where it was logged, empty
outside a span) as it is made, so a format like ``%(trace_id)s %(span_id)s``
works in any handler, wherever it is attached (on ``regiment``, on a child, on
the root) and whenever (before any ``Telemetry`` exists too). That is a log
record factory, installed once when ``regiment`` is imported
(``regiment._log_records``), chained to the factory that was set before: it
leaves every other logger's records alone.

``Telemetry`` also attaches one :class:`TraceContextHandler` to the ``regiment``
logger; ``correlate_logs(logger)`` attaches one to another logger, whose records
then carry the ids from that logger's handlers up.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, final

from opentelemetry import context as otel_context

from regiment._log_records import LOGGER_NAME, tag
from regiment.telemetry._content import redact

if TYPE_CHECKING:
    from opentelemetry._logs import Logger
    from opentelemetry.sdk.resources import Resource

    from regiment.telemetry._export_watch import ExportWatch

__all__ = (
    "LOGGER_NAME",
    "LogExport",
    "TraceContextHandler",
    "correlate_logs",
    "resolve_logs_endpoint",
)


@final
class TraceContextHandler(logging.Handler):
    """Adds ``trace_id`` / ``span_id`` of the current span to each record; emits nothing."""

    def handle(self, record: logging.LogRecord) -> bool:
        """Tag the record (unless it was made tagged), then pass it to :meth:`emit`."""
        if "trace_id" not in record.__dict__:
            tag(record)
        self.emit(record)
        return True

    def emit(self, record: logging.LogRecord) -> None:
        """Nothing to write: the record goes on to the application's handlers.

        If there are none, Python's last-resort handler gets it, as it would have
        without this handler in the chain.
        """
        last = logging.lastResort
        if last is not None and record.levelno >= last.level and not self._others(record):
            last.handle(record)

    def _others(self, record: logging.LogRecord) -> bool:
        logger: logging.Logger | None = logging.getLogger(record.name)
        while logger is not None:
            if any(handler is not self for handler in logger.handlers):
                return True
            logger = logger.parent if logger.propagate else None
        return False


def correlate_logs(logger: logging.Logger | None = None) -> TraceContextHandler:
    """Attach a :class:`TraceContextHandler` to ``logger`` (default: ``regiment``), once.

    Returns:
        The handler that is attached (the one found there, if any).
    """
    target = logger or logging.getLogger(LOGGER_NAME)
    for handler in target.handlers:
        if isinstance(handler, TraceContextHandler):
            return handler
    handler = TraceContextHandler()
    target.addHandler(handler)
    return handler


@final
class LogExport:
    """Records of the ``regiment`` loggers, exported over OTLP/HTTP (``/v1/logs``)
    with their trace and span ids, next to the spans.

    Made by ``configure_tracing(logs=True)``; ``shutdown`` flushes and detaches it.
    """

    def __init__(
        self, url: str, timeout: float | None, resource: Resource, watch: ExportWatch | None
    ) -> None:
        # Imported only when exporting logs: the SDK's log support is optional here.
        from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
        from opentelemetry.sdk._logs import LoggerProvider
        from opentelemetry.sdk._logs.export import BatchLogRecordProcessor, LogRecordExporter

        from regiment.telemetry._logs_gate import GatedLogExporter

        self.url = url
        self.provider = LoggerProvider(resource=resource, shutdown_on_exit=False)  # the handle's
        exporter: LogRecordExporter = OTLPLogExporter(endpoint=url, timeout=timeout)
        if watch is not None:
            exporter = GatedLogExporter(exporter, watch, url)
        self.provider.add_log_record_processor(BatchLogRecordProcessor(exporter))
        self._handler = _OtlpHandler(self.provider.get_logger(LOGGER_NAME))
        logging.getLogger(LOGGER_NAME).addHandler(self._handler)

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        """Export every record logged so far."""
        return self.provider.force_flush(timeout_millis)

    def shutdown(self) -> None:
        """Stop taking records, export what is pending, stop."""
        logging.getLogger(LOGGER_NAME).removeHandler(self._handler)
        self.provider.shutdown()


@final
class _OtlpHandler(logging.Handler):
    """Hands each record to an OpenTelemetry logger, in the context it was logged in
    (so it carries that trace and span id), with what looks like a secret in its
    message redacted as in captured content: a tool's error that quotes a password
    or an API key must not reach the collector, whose readers need not hold them."""

    def __init__(self, logger: Logger) -> None:
        # The logs API loads here, with an export, not with every Telemetry.
        from opentelemetry._logs import SeverityNumber

        super().__init__()
        self._logger = logger
        # Python levels -> OpenTelemetry severity numbers (the lowest of each range).
        self._severity = (
            (logging.CRITICAL, SeverityNumber.FATAL),
            (logging.ERROR, SeverityNumber.ERROR),
            (logging.WARNING, SeverityNumber.WARN),
            (logging.INFO, SeverityNumber.INFO),
            (logging.DEBUG, SeverityNumber.DEBUG),
        )
        self._lowest = SeverityNumber.TRACE

    def emit(self, record: logging.LogRecord) -> None:
        severity = next((n for level, n in self._severity if record.levelno >= level), None)
        self._logger.emit(
            timestamp=int(record.created * 1e9),
            context=otel_context.get_current(),
            severity_number=severity or self._lowest,
            severity_text=record.levelname,
            body=redact(record.getMessage()),
            attributes={
                "code.file.path": record.pathname,
                "code.line.number": record.lineno,
                "code.function.name": record.funcName,
                "logger.name": record.name,
            },
        )


def resolve_logs_endpoint(traces_url: str, environ: Mapping[str, str]) -> str:
    """``OTEL_EXPORTER_OTLP_LOGS_ENDPOINT`` (as is), else the traces URL with
    ``/v1/logs`` in place of ``/v1/traces``."""
    explicit = environ.get("OTEL_EXPORTER_OTLP_LOGS_ENDPOINT", "").strip()
    if explicit:
        return explicit
    base = traces_url.rstrip("/")
    return base.removesuffix("/v1/traces") + "/v1/logs"
