"""``trace_id`` and ``span_id`` on every record of the ``regiment`` loggers, as it is made.

A log record factory, chained to the one set before and installed once when
``regiment`` is imported, so a handler anywhere (on ``regiment``, on a child, on the
root) can format ``%(trace_id)s``, before any ``Telemetry`` exists too. Other
loggers' records are left alone. The OpenTelemetry API is imported with the first
record of ours, not with ``regiment`` (issue #22: import time).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import final

__all__ = ("LOGGER_NAME", "TraceContextRecords", "install", "tag")

LOGGER_NAME = "regiment"
_CHILDREN = LOGGER_NAME + "."


def tag(record: logging.LogRecord) -> None:
    """Set the record's ``trace_id`` / ``span_id`` from the current span (empty outside one)."""
    from opentelemetry import trace  # loaded once; a dict lookup after that

    context = trace.get_current_span().get_span_context()
    if context.is_valid:
        record.trace_id = format(context.trace_id, "032x")
        record.span_id = format(context.span_id, "016x")
    else:
        record.trace_id = record.span_id = ""


@final
class TraceContextRecords:
    """A log record factory: the one set before, and the ids on a ``regiment`` record."""

    __slots__ = ("_previous",)
    regiment_trace_context = True  # how a second install knows it is in the chain

    def __init__(self, previous: Callable[..., logging.LogRecord]) -> None:
        self._previous = previous

    def __call__(self, *args: object, **kwargs: object) -> logging.LogRecord:
        record = self._previous(*args, **kwargs)
        name = record.name  # None from logging.makeLogRecord, which sets it after
        if name == LOGGER_NAME or (name is not None and name.startswith(_CHILDREN)):
            tag(record)
        return record


def install() -> None:
    """Put the factory in the chain, once (a second call, or a reload, finds it there)."""
    previous = logging.getLogRecordFactory()
    if not getattr(previous, "regiment_trace_context", False):
        logging.setLogRecordFactory(TraceContextRecords(previous))
