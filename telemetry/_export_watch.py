"""Knowing whether spans left: an exporter wrapper that keeps the first failure's reason.

The OTLP exporter never raises; it logs (a warning per retry, then an error)
and returns ``FAILURE``. ``ExportWatch`` turns that into one reason a program
can print and one WARNING per outage on ``regiment.telemetry`` (not one record
per batch and retry), and, once the provider is closing, stops retrying a
collector that is not there so the exit is not held up.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, final

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

from regiment.telemetry._content import redact

if TYPE_CHECKING:
    from requests import Response

__all__ = ("ExportWatch",)

# The OTLP exporters log through loggers under this name, one per signal.
_EXPORTER_LOGGER = "opentelemetry.exporter.otlp"
_SIGNAL_LOGGERS = {
    "opentelemetry.exporter.otlp.proto.http.trace_exporter": "spans",
    "opentelemetry.exporter.otlp.proto.http.metric_exporter": "metrics",
    "opentelemetry.exporter.otlp.proto.http._log_exporter": "logs",
}
log = logging.getLogger("regiment.telemetry")
_ERRNO = re.compile(r"\[Errno -?\d+\][^'\")]*")
_REASON_LIMIT = 200
_RETRIED = " until the export timeout ran out"
# What the exporter's last word means when no attempt logged a reason of its own:
# the deadline passed, whether the collector never answered or kept refusing.
_NO_ANSWER = (
    "no export went through within the export timeout (is the collector up? if it is "
    "slow, raise export_timeout= or OTEL_EXPORTER_OTLP_TIMEOUT)"
)


@final
class ExportWatch(SpanExporter):
    """Wraps ``exporter``: counts the spans it exported and keeps why an export failed.

    While it is attached, the exporters' log records (a warning per retry, an error
    per batch) are taken by this watch (they become :attr:`failure`) and reach no
    handler: an application that configured logging gets one WARNING on
    ``regiment.telemetry`` when an export of spans, metrics or logs first fails,
    none for the batches that fail after it, and an INFO once one goes through
    again. Nothing is logged while the provider is closing (:attr:`failure` says
    it then), so a missing collector prints nothing by itself at exit.

    Args:
        exporter: the exporter that does the sending.
        endpoint: where it sends (named in the WARNING).
    """

    def __init__(self, exporter: SpanExporter, endpoint: str = "") -> None:
        self._exporter = exporter
        self._endpoint = endpoint
        self._lock = threading.Lock()
        self._failure: str | None = None
        self._closing = False
        self._shut = False
        self._holds = 0
        self.exported = 0
        self._handler = _ReasonHandler()
        self._reasons: dict[str, str] = {}  # per signal: the failing export's first reason
        self._down: set[str] = set()  # the signals whose last export failed
        self._threads: set[int] = set()  # the threads in one of this watch's exports
        self._heard: dict[str, str] = {}  # "spans": the collector's error answer, this export
        logging.getLogger(_EXPORTER_LOGGER).addHandler(self._handler)
        for name in _SIGNAL_LOGGERS:
            _Quiet.on(logging.getLogger(name)).sinks.append(self._take)

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
        with self._lock:
            self._heard.clear()
        with self.exporting():
            result = self._exporter.export(spans)
        ok = result is SpanExportResult.SUCCESS
        with self._lock:
            if not ok and "spans" in self._heard:
                self._reasons["spans"] = _answered(self._reasons.get("spans"), self._heard["spans"])
            if ok:
                self.exported += len(spans)
            elif self._failure is None:
                self._failure = (
                    self._reasons.get("spans")
                    or self._handler.reason()
                    or "the exporter reported a failure"
                )
        self.outcome("spans", ok, self._endpoint)
        return result

    def outcome(self, signal: str, ok: bool, endpoint: str) -> None:
        """One export of ``signal`` (``spans``, ``metrics``, ``logs``) to ``endpoint`` ended:
        the first failure of an outage is a WARNING, the first success after it an INFO."""
        with self._lock:
            reason = self._reasons.pop(signal, None) or "the exporter reported a failure"
            if ok:
                told = signal in self._down
                self._down.discard(signal)
            else:
                told = signal not in self._down and not self._closing
                self._down.add(signal)
        endpoint = redact(endpoint)  # a URL's password is not the log's
        if told and ok:
            log.info("%s are exported to %s again", signal, endpoint)
        elif told:
            log.warning(
                "could not export %s to %s: %s; each batch is tried in turn and dropped if it "
                "fails, and no more failures are logged until one goes through (is the "
                "collector up at that address, and does it take %s?)",
                signal,
                endpoint,
                reason,
                signal,
            )

    def heard(self, response: Response, *args: object, **kwargs: object) -> None:
        """A response hook for the exporter's ``requests`` session: notes an error answer
        (``503 Service Unavailable``), so a failure says it even when the export timeout
        left no time for the retry whose warning would have quoted it."""
        if response.status_code >= 400:
            with self._lock:
                self._heard["spans"] = f"{response.status_code} {response.reason}".strip()

    @contextmanager
    def exporting(self) -> Iterator[None]:
        """Around one export: the exporters' log records made in this thread meanwhile are
        this watch's (an exporter of the application's own, in its own thread, keeps its)."""
        thread = threading.get_ident()
        with self._lock:
            self._threads.add(thread)
        try:
            yield
        finally:
            with self._lock:
                self._threads.discard(thread)

    def _take(self, record: logging.LogRecord) -> bool:
        """An exporter's log record: if one of this watch's exports made it, kept as the
        reason of its signal's export (``True``: the record is this watch's to drop)."""
        signal = _SIGNAL_LOGGERS.get(record.name)
        with self._lock:
            if record.thread not in self._threads:
                return False
            reason = _reason_of(record)
            if signal is not None and reason is not None:
                self._reasons.setdefault(signal, reason)
        return True

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
            for name in _SIGNAL_LOGGERS:
                _Quiet.on(logging.getLogger(name)).drop(self._take)

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        """Flush the wrapped exporter."""
        return self._exporter.force_flush(timeout_millis)


class _Quiet(logging.Filter):
    """On one exporter logger: hands each record to the watches attached, and drops one a
    watch's export made (the watch says it once); others pass as they always did."""

    def __init__(self) -> None:
        super().__init__()
        self.sinks: list[Callable[[logging.LogRecord], bool]] = []

    @classmethod
    def on(cls, logger: logging.Logger) -> _Quiet:
        """The logger's filter (one, shared by every watch), added if missing."""
        found = next((f for f in logger.filters if isinstance(f, _Quiet)), None)
        if found is None:
            found = cls()
            logger.addFilter(found)
        return found

    def drop(self, sink: Callable[[logging.LogRecord], bool]) -> None:
        """Stop handing records to ``sink``."""
        if sink in self.sinks:
            self.sinks.remove(sink)

    def filter(self, record: logging.LogRecord) -> bool:
        taken = [sink(record) for sink in list(self.sinks)]  # each watch sees each record
        return not any(taken)


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
    if message.startswith("Transient error") and args:  # a retry's warning: what was wrong
        return f"the collector answered {args[0]}{_RETRIED}"[:_REASON_LIMIT]
    if "due to timeout" in message:  # after a retry's warning, that one is kept instead
        return _NO_ANSWER
    return message[:_REASON_LIMIT]


def _answered(known: str | None, answer: str) -> str:
    """The reason of a failed export whose collector answered ``answer`` (``503 Service
    Unavailable``): the exporter's own words name no status (``Service Unavailable`` in a
    retry's warning) or none at all (it gave up before a retry, "due to timeout")."""
    if known is None or known == _NO_ANSWER:
        return (
            f"the collector answered {answer}, and the export timeout ran out before a retry "
            "could go through (see why the collector refuses; if it is only busy, raise "
            "export_timeout= or OTEL_EXPORTER_OTLP_TIMEOUT)"
        )
    if known.startswith("the collector answered ") and known.endswith(_RETRIED):
        return f"the collector answered {answer}{_RETRIED}"
    return known


def _short(error: BaseException) -> str:
    text = str(error)
    errno = _ERRNO.search(text)
    if errno is not None:  # requests wraps "connection refused" in three layers
        return errno.group(0).strip()
    return f"{type(error).__name__}: {text}"[:_REASON_LIMIT]
