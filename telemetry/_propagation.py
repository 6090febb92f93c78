"""W3C trace context in and out of actor envelopes."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import final

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.trace import Span
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

__all__ = (
    "OTelPropagator",
    "activated",
    "context_headers",
    "extract_context",
    "headers_for",
    "inject",
    "joined_trace",
    "trace_id_hex",
)

# W3C trace context only (``traceparent`` / ``tracestate``): the envelope format
# must not change with whatever OTEL_PROPAGATORS a process happens to set.
_W3C = TraceContextTextMapPropagator()


def inject() -> dict[str, str]:
    """The current context as W3C ``traceparent`` / ``tracestate`` headers.

    Returns an empty dict when there is no valid current span (tracing off).
    """
    headers: dict[str, str] = {}
    _W3C.inject(headers)
    return headers


def headers_for(span: Span) -> dict[str, str]:
    """Headers that make ``span`` the parent on the receiving side."""
    return context_headers(trace.set_span_in_context(span))


def context_headers(context: Context) -> dict[str, str]:
    """The W3C ``traceparent`` / ``tracestate`` headers of ``context`` (empty when it
    holds no valid span)."""
    headers: dict[str, str] = {}
    _W3C.inject(headers, context=context)
    return headers


def extract_context(headers: Mapping[str, str]) -> Context:
    """A fresh context holding only the remote span described by ``headers``.

    It starts from an empty context, not the current one, so nothing ambient
    leaks in: headers without a valid ``traceparent`` give a context with no
    span, and spans started in it begin a new trace.

    Every step of a run carries the same headers, so the last few parsed
    contexts are kept (a ``Context`` is immutable, so sharing one is safe).
    """
    key = (headers.get(_TRACEPARENT), headers.get(_TRACESTATE))
    found = _extracted.get(key)
    if found is None:
        found = _W3C.extract(headers, context=Context())
        if len(_extracted) >= _EXTRACTED_LIMIT:
            _extracted.clear()  # a whole clear is one atomic step for other threads
        _extracted[key] = found
    return found


def joined_trace(headers: Mapping[str, str]) -> AbstractContextManager[None]:
    """Make the trace a caller's W3C headers name current for the block, so a run started
    in it joins the caller's trace (its root span a child of the caller's span).

    A span that is current already wins (an application's own HTTP instrumentation made
    one for the request, itself a child of those headers): the block then changes nothing.
    Headers without a valid ``traceparent`` change nothing either.
    """
    if trace.get_current_span().get_span_context().is_valid:
        return nullcontext()
    remote = extract_context(headers)
    if not trace.get_current_span(remote).get_span_context().is_valid:
        return nullcontext()
    return activated(remote)


_TRACEPARENT = "traceparent"
_TRACESTATE = "tracestate"
_EXTRACTED_LIMIT = 256
_extracted: dict[tuple[str | None, str | None], Context] = {}


def trace_id_hex(span: Span) -> str | None:
    """The span's trace id as 32 hex digits, or ``None`` for a non-recording span."""
    span_context = span.get_span_context()
    if not span_context.is_valid:
        return None
    return format(span_context.trace_id, "032x")


@final
class OTelPropagator:
    """Carries the OpenTelemetry context through actor envelopes.

    It satisfies ``regiment.actors.ContextPropagator`` structurally: the actor
    runtime calls :meth:`inject` in the sender's task and enters
    :meth:`activate` around the receiver's handler, so spans the handler starts
    are children of the sender's span even when one actor serves many runs.
    """

    def inject(self) -> dict[str, str]:
        """Return the sender's current context as W3C headers."""
        return inject()

    def activate(self, headers: Mapping[str, str]) -> AbstractContextManager[None]:
        """Make the context in ``headers`` current for the duration of the block.

        The handler's own ambient context is replaced, not merged, so a message
        without trace headers starts its spans in a new trace instead of under
        whatever span happened to be current when the actor was started.
        """
        return activated(extract_context(headers))


@contextmanager
def activated(ctx: Context) -> Iterator[None]:
    """``ctx`` current for the block, the context before it current again after."""
    token = otel_context.attach(ctx)
    try:
        yield
    finally:
        otel_context.detach(token)
