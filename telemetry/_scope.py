"""One span as a context manager: current while open, ended on exit, errors recorded safely."""

from __future__ import annotations

import traceback
from contextlib import AbstractContextManager
from types import TracebackType
from typing import final

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.trace import Span, SpanKind, Status, StatusCode
from opentelemetry.util.types import Attributes

from regiment.telemetry import _semconv as sc
from regiment.telemetry._content import redact, truncate

__all__ = ("mark_error", "open_span")

# Error descriptions and stack traces are not content, so they are always
# recorded, but they are redacted and kept short all the same.
_ERROR_TEXT_LIMIT = 1024
_STACK_LIMIT = 8192


def open_span(
    tracer: trace.Tracer,
    name: str,
    *,
    kind: SpanKind = SpanKind.INTERNAL,
    attributes: Attributes = None,
    context: Context | None = None,
) -> AbstractContextManager[Span]:
    """Start a span on entry, make it current, and end it when the block exits.

    An ``Exception`` escaping the block marks the span ERROR with ``error.type``
    and an ``exception`` event. Any other ``BaseException`` (cancellation on
    asyncio or trio, ``KeyboardInterrupt``, ``GeneratorExit``) is not a failure
    of the work: the span gets ``regiment.cancelled = true`` and an event, and
    its status stays unset.

    Args:
        tracer: the tracer to start the span with.
        name: the span name.
        kind: the span kind.
        attributes: attributes known at start (sampling may look at them).
        context: the parent context; ``None`` means the current one.
    """
    return _SpanScope(tracer, name, kind, attributes, context)


@final
class _SpanScope(AbstractContextManager[Span]):
    # A plain class rather than @contextmanager around use_span: this is on
    # every step's path, and one object is much cheaper than two generators.
    __slots__ = ("_attributes", "_context", "_kind", "_name", "_span", "_token", "_tracer")

    def __init__(
        self,
        tracer: trace.Tracer,
        name: str,
        kind: SpanKind,
        attributes: Attributes,
        context: Context | None,
    ) -> None:
        self._tracer = tracer
        self._name = name
        self._kind = kind
        self._attributes = attributes
        self._context = context

    def __enter__(self) -> Span:
        span = self._tracer.start_span(
            self._name,
            context=self._context,
            kind=self._kind,
            attributes=self._attributes,
            record_exception=False,
            set_status_on_exception=False,
        )
        self._span = span
        self._token = otel_context.attach(trace.set_span_in_context(span))
        return span

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        try:
            if isinstance(exc, Exception):
                _record_exception(self._span, exc)
            elif exc is not None:
                _record_cancellation(self._span, exc)
        finally:
            otel_context.detach(self._token)
            self._span.end()


def mark_error(span: Span, error_type: str, description: str = "") -> None:
    """Mark ``span`` failed without an exception (e.g. a step that reported failure).

    Args:
        span: the span.
        error_type: a low-cardinality error class (``timeout``, ``ToolError``, ...).
        description: a short human-readable reason; redacted and truncated.
    """
    if not span.is_recording():
        return
    span.set_attribute(sc.ERROR_TYPE, error_type)
    span.set_status(Status(StatusCode.ERROR, truncate(redact(description), _ERROR_TEXT_LIMIT)))


def _error_type(exc: BaseException) -> str:
    cls = type(exc)
    if cls.__module__ == "builtins":
        return cls.__qualname__
    return f"{cls.__module__}.{cls.__qualname__}"


def _record_exception(span: Span, exc: Exception) -> None:
    if not span.is_recording():
        return
    message = truncate(redact(str(exc)), _ERROR_TEXT_LIMIT)
    stack = "".join(traceback.format_exception(exc))
    span.add_event(
        "exception",
        {
            "exception.type": _error_type(exc),
            "exception.message": message,
            # The innermost frames are the telling ones, so keep the tail.
            "exception.stacktrace": redact(stack)[-_STACK_LIMIT:],
        },
    )
    mark_error(span, _error_type(exc), message)


def _record_cancellation(span: Span, exc: BaseException) -> None:
    if not span.is_recording():
        return
    span.set_attribute(sc.REGIMENT_CANCELLED, True)
    span.add_event(sc.CANCELLED_EVENT, {"exception.type": _error_type(exc)})
