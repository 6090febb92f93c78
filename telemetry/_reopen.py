"""Opening a run's root span again, with the ids it had: its process died before ending it.

A process killed mid-run never ends, so never exports, its run's root span, while the
spans it did end were exported under it. The resume that finishes the run opens that
same span again: the span id and start the journal kept, the same parent, so the trace
has its root. The OpenTelemetry API cannot give a span its id; the SDK makes ids with
its tracer's ``IdGenerator``, so this one span is started with a copy of our SDK tracer
whose generator gives the journaled ids (the provider and its tracers are left as they
are). A provider that is not the SDK's cannot: the resumed root is then a new span under
the lost one, as before, and an INFO on ``regiment.telemetry`` says so.

Imported on a resume only: it loads the OpenTelemetry SDK.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager
from datetime import UTC, datetime, timedelta
from typing import final

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.sdk.trace import Tracer as SdkTracer
from opentelemetry.sdk.trace.id_generator import IdGenerator
from opentelemetry.trace import Link, Span, SpanContext, SpanKind, TraceFlags
from opentelemetry.util.types import Attributes, AttributeValue

from regiment.telemetry import _semconv as sc
from regiment.telemetry._open_root import OpenRoot, resumer_links, span_context_of
from regiment.telemetry._propagation import extract_context
from regiment.telemetry._scope import open_span

__all__ = ("GivenIds", "nanoseconds", "parent_context", "reopened_root")

_log = logging.getLogger("regiment.telemetry")
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def reopened_root(
    tracer_provider: trace.TracerProvider,
    scope: tuple[str, str],
    span: tuple[str, dict[str, AttributeValue], bool],
    resume: tuple[int, str | None],
    root: OpenRoot,
) -> AbstractContextManager[Span] | None:
    """The resumed run's root span ``span`` (name, attributes, capture) as ``root`` again, on
    the provider's tracer of ``scope`` (name, version); ``resume``: which resume this is and
    the run's first root's ``traceparent`` (linked to, when ``root`` is a later one).
    ``None`` if it cannot be (the provider is not the SDK's)."""
    number, first_root = resume
    made = _reopening_tracer(tracer_provider, scope, root, number)
    if made is None:
        return None
    tracer, context, own = made
    name, attributes, capture = span
    attributes[sc.REGIMENT_RUN_RESUME] = number
    links = resumer_links(own.trace_id)
    first = span_context_of(first_root)
    if first is not None and first.span_id != own.span_id:  # a later root: as _continued's
        links.insert(0, Link(first, {sc.REGIMENT_RUN_RESUME: number}))
    return open_span(
        tracer, name, attributes=attributes, context=context, capture=capture, links=links
    )


def _reopening_tracer(
    tracer_provider: trace.TracerProvider, scope: tuple[str, str], root: OpenRoot, number: int
) -> tuple[trace.Tracer, Context, SpanContext] | None:
    """A tracer whose next span is ``root`` again (its ids, its start, the resumes it
    lived through as ``regiment.run.resumed`` events: this one, ``number``, the last),
    and the context to start it in (its parent's, or none); ``None`` if it cannot be."""
    own = span_context_of(root.traceparent)
    if own is None:
        return None
    tracer = tracer_provider.get_tracer(*scope)
    if not isinstance(tracer, SdkTracer):
        _log.info(
            "the tracer provider (%s) cannot give a span the id it had, so the resumed "
            "run's root span is a new one under its first root, which its process never "
            "ended",
            type(tracer_provider).__name__,
        )
        return None
    fixed = copy.copy(tracer)  # its processors, sampler, resource and limits; our ids
    fixed.id_generator = GivenIds(own)
    context = parent_context(root.parent)
    resumes = (*((n, nanoseconds(at)) for n, at in root.resumes), (number, None))
    return _Reopening(fixed, nanoseconds(root.started), resumes), context, own


def parent_context(parent: str | None) -> Context:
    """The context to start a span a killed process left open in: its journaled parent's
    (``traceparent``), or an empty one when it had none (not the resumer's current span)."""
    if parent is None or span_context_of(parent) is None:
        return Context()
    return extract_context({"traceparent": parent})


def nanoseconds(when: datetime) -> int:
    """``when`` as nanoseconds since the epoch (a span's times)."""
    if when.tzinfo is None:  # (the journal writes UTC times; a hand-made record may not)
        when = when.replace(tzinfo=UTC)
    return (when - _EPOCH) // timedelta(microseconds=1) * 1000


@final
class GivenIds(IdGenerator):
    """The ids of the one span it makes: the journaled ones."""

    def __init__(self, own: SpanContext) -> None:
        self._own = own

    def generate_span_id(self) -> int:
        return self._own.span_id

    def generate_trace_id(self) -> int:
        return self._own.trace_id

    def is_trace_id_random(self) -> bool:
        # As the first process's generator said: its traceparent's flags came from it.
        return bool(self._own.trace_flags & _RANDOM_TRACE_ID)


# W3C trace context level 2's "random" flag (older APIs do not name it).
_RANDOM_TRACE_ID: int = getattr(TraceFlags, "RANDOM_TRACE_ID", 0x02)


@final
class _Reopening(trace.Tracer):
    """Starts its one span at the journaled time, with an event per resume."""

    def __init__(
        self, tracer: trace.Tracer, start: int, resumes: Sequence[tuple[int, int | None]]
    ) -> None:
        self._tracer = tracer
        self._start = start
        self._resumes = resumes

    def start_span(
        self,
        name: str,
        context: Context | None = None,
        kind: SpanKind = SpanKind.INTERNAL,
        attributes: Attributes = None,
        links: Sequence[Link] | None = (),
        start_time: int | None = None,
        record_exception: bool = True,
        set_status_on_exception: bool = True,
    ) -> Span:
        span = self._tracer.start_span(
            name, context, kind, attributes, links, self._start, record_exception,
            set_status_on_exception,
        )  # fmt: skip
        for number, at in self._resumes:  # when each resume took the run over
            span.add_event(sc.RUN_RESUMED_EVENT, {sc.REGIMENT_RUN_RESUME: number}, at)
        return span

    def start_as_current_span(  # type: ignore[override]
        self, name: str, *args: object, **kwargs: object
    ) -> Iterator[Span]:
        raise NotImplementedError("the run's root span is started with start_span")
