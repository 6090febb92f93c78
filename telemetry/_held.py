"""A journaled, traced run's step spans, held back from export until the journal holds
their step's report.

A step's ``invoke_agent`` span ends (in its worker) before the planner journals the
step's report, and that record is committed up to a second later (``COMMIT_WAIT``), or
never when the journal fails. A resume ends, as interrupted and with its journaled id,
every step span whose dispatch the journal holds with no report: had the span been
exported meanwhile (by a process that lived on with a failing journal, or one killed
within that second), the trace held the same span id twice. So the planner names each
step span it sends (:meth:`HeldEnds.expect`); once ended, such a span waits here until the
run says its report is committed (:meth:`HeldEnds.release`: it goes on to the provider's
processors), or that the journal will never hold it (:meth:`HeldEnds.drop`: the resume
ends it). Only spans a run expects are held: a Ray replica's, or an untraced run's, never.

A span told to be dropped before it started is forgotten at once: it may never start (a
step cut while queued, or a provider that is not the SDK's, whose spans never come here),
and a long-lived team must not keep such an entry for good.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, final

if TYPE_CHECKING:
    from opentelemetry.context import Context
    from opentelemetry.sdk.trace import ReadableSpan, Span

__all__ = ("HeldEnds",)

_DROP = None  # an expected span's fate once the journal will never hold its report
_STARTED = 1  # an expected span's, started and not ended (False: not started yet)


@final
class HeldEnds:
    """The span processor of the tracer that starts step spans with given ids (a copy of
    the SDK's, see ``GivenSpanIds``): every span goes on to ``inner`` (the provider's
    processors) but an expected one, which waits for its run's word."""

    __slots__ = ("_expected", "inner")

    def __init__(self) -> None:
        self.inner: Any = None  # the SDK tracer's processor, set as the copy is made
        # An expected span's id: False (not started), _STARTED, its ended span (held) or
        # _DROP (started, to drop as it ends).
        self._expected: dict[int, ReadableSpan | int | None] = {}

    def __len__(self) -> int:
        """How many spans it waits for (expected, held, or to drop as they end)."""
        return len(self._expected)

    def expect(self, span_id: str) -> None:
        """Hold the span of id ``span_id`` (16 hex digits) once it ends."""
        self._expected[int(span_id, 16)] = False

    def release(self, span_ids: Iterable[str]) -> None:
        """Export these spans (as they end, if they have not yet): the journal holds what
        their steps did."""
        for span_id in span_ids:
            held = self._expected.pop(int(span_id, 16), False)
            if held is not False and held is not None and held is not _STARTED:  # it ended
                self.inner.on_end(held)

    def drop(self, span_ids: Iterable[str]) -> None:
        """Never export these spans: the journal holds their dispatch and not their report,
        so the resume that finishes the run ends each, once, as interrupted."""
        for span_id in span_ids:
            key = int(span_id, 16)
            if self._expected.pop(key, _DROP) is _STARTED:  # not ended yet: drop it as it ends
                self._expected[key] = _DROP

    # The SDK's SpanProcessor, as the span calls it.
    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        key = span.context.span_id if span.context is not None else 0
        if self._expected.get(key, True) is False:  # a run's step: it may now end
            self._expected[key] = _STARTED
        self.inner.on_start(span, parent_context=parent_context)

    def _on_ending(self, span: Span) -> None:
        ending = getattr(self.inner, "_on_ending", None)
        if ending is not None:
            ending(span)

    def on_end(self, span: ReadableSpan) -> None:
        key = span.context.span_id if span.context is not None else 0
        fate = self._expected.get(key, True)
        if fate is True:  # not one of a run's steps
            self.inner.on_end(span)
        elif fate is _DROP:
            del self._expected[key]
        else:  # (started: it came through on_start)
            self._expected[key] = span

    def shutdown(self) -> None:
        """Nothing of its own: the provider shuts its processors down."""

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True
