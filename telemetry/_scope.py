"""One span as a context manager: current while open, ended on exit, errors recorded safely."""

from __future__ import annotations

import traceback
from collections.abc import Sequence
from contextlib import AbstractContextManager
from types import TracebackType
from typing import Any, final

import msgspec
from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.trace import Link, Span, SpanKind, Status, StatusCode
from opentelemetry.util.types import Attributes, AttributeValue

from regiment.telemetry import _semconv as sc
from regiment.telemetry._content import redacted_cut, redacted_tail

__all__ = (
    "error_code",
    "error_type",
    "exception_event",
    "leave_open",
    "mark_error",
    "open_span",
    "record_cancellation",
    "record_exception",
)

# Exception messages and stack texts quote user data (a goal, a tool argument),
# so they are content: recorded only when capture is on, and then redacted and
# kept short. With capture off a span says what failed (type, code, length) only.
_ERROR_TEXT_LIMIT = 1024
_STACK_LIMIT = 8192


def open_span(
    tracer: trace.Tracer,
    name: str,
    *,
    kind: SpanKind = SpanKind.INTERNAL,
    attributes: Attributes = None,
    context: Context | None = None,
    capture: bool = False,
    links: Sequence[Link] | None = None,
    end_on_exit: bool = True,
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
        capture: record an exception's message and stack text (content) too.
        links: span links, given at start (so a sampler sees them).
        end_on_exit: ``False`` leaves the span open when the block exits (it is
            no longer current); the caller ends it, with ``span.end()``.
    """
    return _SpanScope(tracer, name, kind, attributes, context, capture, links, end_on_exit)


def leave_open(scope: AbstractContextManager[Span]) -> bool:
    """Make a span method's ``scope`` (a run's: ``Telemetry.run_span``) leave its span open
    when it exits: not ended, so not exported (its context is still let go of). Whether it
    will (``False``: nothing is traced, or the scope is not one of ours)."""
    inner = getattr(scope, "scope", scope)  # a run counted in regiment.runs.active: its own
    if not isinstance(inner, _SpanScope):
        return False
    inner.end_on_exit = False
    return True


@final
class _SpanScope(msgspec.Struct):
    """A span's scope: started and made current on entry, ended on exit. A msgspec
    struct: made by C code (no ``__init__`` call on every span; no ``@contextmanager``
    around ``use_span`` either, two generators a span), so a span costs its ``__enter__``
    and ``__exit__`` only (issue #22, tests/telemetry/test_span_path_cost.py)."""

    tracer: trace.Tracer
    name: str
    kind: SpanKind
    attributes: Attributes
    context: Context | None
    capture: bool
    links: Sequence[Link] | None = None
    end_on_exit: bool = True
    span: Any = None  # the span and its context's token, once entered
    token: Any = None

    def __enter__(self) -> Span:
        # Positional, in the order of the API's ``Tracer.start_span``: no keyword matching
        # on every span (name, context, kind, attributes, links, start_time,
        # record_exception, set_status_on_exception).
        span = self.tracer.start_span(
            self.name,
            self.context,
            self.kind,
            self.attributes,
            self.links,
            None,
            False,
            False,
        )
        self.span = span
        self.token = otel_context.attach(trace.set_span_in_context(span))
        return span

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        span, token = self.span, self.token  # (set on entry)
        if exc is None:  # the common way out: nothing to record
            otel_context.detach(token)
            if self.end_on_exit:
                span.end()
            return
        try:
            if isinstance(exc, Exception):
                record_exception(span, exc, capture=self.capture)
            else:
                record_cancellation(span, exc)
        finally:
            otel_context.detach(token)
            if self.end_on_exit:
                span.end()


def mark_error(
    span: Span, error_type: str, description: str = "", *, capture: bool = False
) -> None:
    """Mark ``span`` failed without an exception (e.g. a step that reported failure).

    Args:
        span: the span.
        error_type: a low-cardinality error class (``timeout``, ``ToolError``, ...).
        description: a short human-readable reason. It may quote user data, so it
            becomes the status text only when ``capture`` is on (redacted and
            truncated); otherwise the status says ``error_type`` and the span
            gets ``regiment.error.message_length``.
        capture: whether content may be recorded.
    """
    if not span.is_recording():
        return
    span.set_attribute(sc.ERROR_TYPE, error_type)
    if capture:
        text = redacted_cut(description, _ERROR_TEXT_LIMIT)
    else:
        text = error_type
        if description:
            span.set_attribute(sc.REGIMENT_ERROR_MESSAGE_LENGTH, len(description))
    span.set_status(Status(StatusCode.ERROR, text))


def error_type(exc: BaseException) -> str:
    """``error.type`` for an exception: its qualified class name (builtins unqualified)."""
    cls = type(exc)
    if cls.__module__ == "builtins":
        return cls.__qualname__
    return f"{cls.__module__}.{cls.__qualname__}"


def error_code(exc: BaseException) -> str:
    """A stable, low-cardinality code for an exception that holds no message text:
    its ``code`` attribute when it has a string one, else its class name."""
    code = getattr(exc, "code", None)
    return code if isinstance(code, str) and code else type(exc).__name__


def record_exception(span: Span, exc: BaseException, *, capture: bool) -> None:
    """Mark ``span`` ERROR for ``exc``: ``error.type``, a code, an ``exception`` event;
    the message and stack text only when ``capture`` is on."""
    if not span.is_recording():
        return
    message = str(exc)
    stack = "".join(traceback.format_exception(exc)) if capture else ""
    exception_event(
        span, error_type(exc), message, capture=capture, code=error_code(exc), stack=stack
    )
    span.set_attribute(sc.REGIMENT_ERROR_CODE, error_code(exc))
    mark_error(span, error_type(exc), message, capture=capture)


def exception_event(
    span: Span,
    kind: str,
    message: str,
    *,
    capture: bool,
    code: str | None = None,
    stack: str = "",
) -> None:
    """Add an ``exception`` event for an exception of type ``kind`` (``code``: its
    ``regiment.error.code``, by default ``kind``); the message and stack only when
    ``capture`` is on, else the message's length."""
    attributes: dict[str, AttributeValue] = {
        "exception.type": kind,
        sc.REGIMENT_ERROR_CODE: kind if code is None else code,
        sc.REGIMENT_ERROR_MESSAGE_LENGTH: len(message),
    }
    if capture:
        attributes["exception.message"] = redacted_cut(message, _ERROR_TEXT_LIMIT)
        if stack:  # the innermost frames are the telling ones, so keep the tail
            attributes["exception.stacktrace"] = redacted_tail(stack, _STACK_LIMIT)
    span.add_event("exception", attributes)


def record_cancellation(span: Span, exc: BaseException | None, reason: str = "") -> None:
    """Mark ``span``'s work cancelled: ``regiment.cancelled`` and its event (with the
    cancellation's ``exception.type`` when there was one, and ``regiment.cancel.reason``,
    who called it off, when known: a fixed text of ours, never content); the status
    stays unset."""
    if not span.is_recording():
        return
    span.set_attribute(sc.REGIMENT_CANCELLED, True)
    attributes: dict[str, AttributeValue] = {}
    if exc is not None:
        attributes["exception.type"] = error_type(exc)
    if reason:
        attributes[sc.REGIMENT_CANCEL_REASON] = reason
    span.add_event(sc.CANCELLED_EVENT, attributes or None)


@final
class _Counted(AbstractContextManager[Span]):
    """A run's span scope, counted in ``regiment.runs.active`` while it is open."""

    __slots__ = ("_active", "scope")

    def __init__(
        self, scope: AbstractContextManager[Span], active: AbstractContextManager[None]
    ) -> None:
        self.scope, self._active = scope, active  # scope: see leave_open

    def __enter__(self) -> Span:
        self._active.__enter__()
        try:
            return self.scope.__enter__()
        except BaseException as exc:
            self._active.__exit__(type(exc), exc, exc.__traceback__)
            raise

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> bool | None:
        try:
            self.scope.__exit__(kind, exc, tb)
        finally:
            self._active.__exit__(kind, exc, tb)
        return None
