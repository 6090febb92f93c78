"""A finished run's span tree as text, for people without Jaeger."""

from __future__ import annotations

import sys
import threading
from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import TextIO, final

from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor
from opentelemetry.trace import StatusCode
from opentelemetry.util.types import AttributeValue

from regiment.telemetry import _semconv as sc

__all__ = ("ConsoleTraceProcessor", "SpanCollector", "render_trace")

# The attributes worth a glance, in the order they are shown, with short labels.
_LABELS: tuple[tuple[str, str], ...] = (
    (sc.REGIMENT_RUN_ID, "run"),
    (sc.REGIMENT_RUN_STATUS, "status"),
    (sc.REGIMENT_BUDGET_EXHAUSTED, "budget"),
    (sc.REGIMENT_BUDGET_LIMIT, "limit"),
    (sc.REGIMENT_PLAN_VERSION, "plan"),
    (sc.REGIMENT_REPORT_VERSION, "report_plan"),
    (sc.REGIMENT_PLAN_VERSIONS, "versions"),
    (sc.REGIMENT_REPORTS_STALE_DROPPED, "stale_dropped"),
    (sc.REGIMENT_PLAN_STEPS, "steps"),
    (sc.REGIMENT_REPLAN_REASON, "reason"),
    (sc.REGIMENT_STEP_ID, "step"),
    (sc.REGIMENT_STEP_ATTEMPT, "attempt"),
    (sc.REGIMENT_STEP_OUTCOME, "outcome"),
    (sc.REGIMENT_CHECK_NAME, "check"),
    (sc.REGIMENT_CHECK_PASSED, "passed"),
    (sc.REGIMENT_ROUND, "round"),
    (sc.REGIMENT_CRITIQUE_PASSED, "passed"),
    (sc.REGIMENT_CANCEL_REASON, "why"),
    (sc.GEN_AI_TOOL_CALL_ID, "call"),
    (sc.REGIMENT_TOOL_OUTCOME, "outcome"),
    (sc.REGIMENT_APPROVAL_OUTCOME, "approval"),
    (sc.REGIMENT_REPLAYED, "replayed"),
    (sc.REGIMENT_GUARDRAIL_NAME, "guard"),
    (sc.REGIMENT_GUARDRAIL_SUBJECT, "subject"),
    (sc.REGIMENT_GUARDRAIL_OUTCOME, "outcome"),
    (sc.GEN_AI_RESPONSE_FINISH_REASONS, "finish"),
    (sc.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS, "cache_read"),
    (sc.REGIMENT_USAGE_MODEL_CALLS, "model_calls"),
    (sc.REGIMENT_USAGE_TOOL_CALLS, "tool_calls"),
)
_TOKEN_PAIRS = (
    (sc.GEN_AI_USAGE_INPUT_TOKENS, sc.GEN_AI_USAGE_OUTPUT_TOKENS),
    (sc.REGIMENT_USAGE_INPUT_TOKENS, sc.REGIMENT_USAGE_OUTPUT_TOKENS),
)
_HIDDEN_WHEN_ZERO = frozenset({sc.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS})
_HIDDEN_ON_REPLAN = (sc.REGIMENT_PLAN_VERSION,)
_VALUE_LIMIT = 60


def render_trace(spans: Sequence[ReadableSpan]) -> str:
    """Draw spans as trees: one per root, children in start order.

    Each line shows the span name, its duration in milliseconds and the key
    attributes (run, plan version, step, tokens, outcome, ...); ``regiment.*``
    events (such as a dropped stale report) appear as ``*`` lines under their
    span. A span whose parent is not among ``spans`` is drawn as a root.

    Args:
        spans: finished spans, e.g. from a ``SpanCollector``.

    Returns:
        The text, one line per span or event, without a trailing newline.
    """
    ids = {span.context.span_id for span in spans if span.context is not None}
    children: dict[int | None, list[ReadableSpan]] = defaultdict(list)
    for span in spans:
        parent = span.parent.span_id if span.parent is not None else None
        children[parent if parent in ids else None].append(span)
    lines: list[str] = []
    for root in _by_start(children[None]):
        _draw(root, children, "", "", lines)
    return "\n".join(lines)


def _by_start(spans: list[ReadableSpan]) -> list[ReadableSpan]:
    return sorted(spans, key=lambda span: span.start_time or 0)


def _draw(
    span: ReadableSpan,
    children: Mapping[int | None, list[ReadableSpan]],
    lead: str,
    indent: str,
    lines: list[str],
) -> None:
    lines.append(f"{lead}{_describe(span)}")
    # Events and child spans in time order, so a dropped report shows where it happened.
    timed: list[tuple[int, str | ReadableSpan]] = [
        (
            event.timestamp,
            f"* {event.name.removeprefix('regiment.')}{_key_values(event.attributes or {})}",
        )
        for event in span.events
        if event.name.startswith("regiment.")
    ]
    timed.extend((kid.start_time or 0, kid) for kid in children.get(_span_id(span), []))
    timed.sort(key=lambda pair: pair[0])
    items = [item for _, item in timed]
    for index, item in enumerate(items):
        last = index == len(items) - 1
        branch, extend = ("└─ ", "   ") if last else ("├─ ", "│  ")
        if isinstance(item, str):
            lines.append(f"{indent}{branch}{item}")
        else:
            _draw(item, children, indent + branch, indent + extend, lines)


def _span_id(span: ReadableSpan) -> int | None:
    return span.context.span_id if span.context is not None else None


def _describe(span: ReadableSpan) -> str:
    attributes = span.attributes or {}
    text = f"{span.name}  {_duration_ms(span)}{_key_values(attributes)}"
    if span.status.status_code is StatusCode.ERROR:
        text += f"  ERROR {attributes.get(sc.ERROR_TYPE, '')}".rstrip()
    if attributes.get(sc.REGIMENT_CANCELLED):
        text += "  CANCELLED"
    return text


def _duration_ms(span: ReadableSpan) -> str:
    if span.start_time is None or span.end_time is None:
        return "(open)"
    return f"{(span.end_time - span.start_time) / 1e6:.1f} ms"


def _key_values(attributes: Mapping[str, AttributeValue]) -> str:
    old = attributes.get(sc.REGIMENT_PLAN_OLD_VERSION)
    hidden = _HIDDEN_ON_REPLAN if old is not None else ()  # v1->v2 says the version
    parts = [
        f"{label}={_show(attributes[key])}"
        for key, label in _LABELS
        if key in attributes
        and not (key in _HIDDEN_WHEN_ZERO and attributes[key] == 0)
        and key not in hidden
    ]
    new = attributes.get(sc.REGIMENT_PLAN_NEW_VERSION)
    if old is not None:
        parts.insert(0, f"plan v{old}->v{new if new is not None else '?'}")
    before = attributes.get(sc.REGIMENT_COMPRESS_BEFORE_TOKENS)
    if before is not None:  # a compression: the carried context's tokens, then and now
        parts.append(f"context={before}->{attributes.get(sc.REGIMENT_COMPRESS_AFTER_TOKENS)}")
    for input_key, output_key in _TOKEN_PAIRS:
        if input_key in attributes or output_key in attributes:
            parts.append(f"tokens={attributes.get(input_key, 0)}/{attributes.get(output_key, 0)}")
    return "".join(f"  {part}" for part in parts)


def _show(value: AttributeValue) -> str:
    if isinstance(value, str):
        text = value if len(value) <= _VALUE_LIMIT else value[: _VALUE_LIMIT - 3] + "..."
        return repr(text) if " " in text else text
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, Sequence):
        return ",".join(_show(item) for item in value)
    return str(value)


@final
class SpanCollector(SpanProcessor):
    """Keeps every finished span in memory, to render or assert on.

    Add it to a provider (``provider.add_span_processor(collector)``); it sees
    spans as they end, with no batching delay.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._spans: list[ReadableSpan] = []

    def on_end(self, span: ReadableSpan) -> None:
        """Keep the finished span."""
        with self._lock:
            self._spans.append(span)

    def spans(self, trace_id: int | None = None) -> tuple[ReadableSpan, ...]:
        """The finished spans so far, in end order; only one trace's if ``trace_id`` is given."""
        with self._lock:
            kept = tuple(self._spans)
        if trace_id is None:
            return kept
        return tuple(s for s in kept if s.context is not None and s.context.trace_id == trace_id)

    def render(self, trace_id: int | None = None) -> str:
        """``render_trace`` over :meth:`spans`."""
        return render_trace(self.spans(trace_id))

    def clear(self) -> None:
        """Forget every span collected so far."""
        with self._lock:
            self._spans.clear()


@final
class ConsoleTraceProcessor(SpanProcessor):
    """Prints each trace's tree when its local root span ends.

    Spans are held per trace only until their root ends, so a long-running
    service does not accumulate them.

    Args:
        stream: where to write; ``None`` means ``sys.stderr`` at the time of writing.
    """

    def __init__(self, stream: TextIO | None = None) -> None:
        self._stream = stream
        self._lock = threading.Lock()
        self._pending: dict[int, list[ReadableSpan]] = defaultdict(list)

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        """Nothing to do until spans end."""

    def on_end(self, span: ReadableSpan) -> None:
        """Hold the span; print its trace if it is the local root."""
        if span.context is None:
            return
        with self._lock:
            self._pending[span.context.trace_id].append(span)
            if span.parent is not None and not span.parent.is_remote:
                return
            finished = self._pending.pop(span.context.trace_id)
        self._write(render_trace(finished))

    def shutdown(self) -> None:
        """Print whatever is still held (traces whose root never ended here)."""
        with self._lock:
            leftovers = [span for spans in self._pending.values() for span in spans]
            self._pending.clear()
        if leftovers:
            self._write(render_trace(leftovers))

    def _write(self, text: str) -> None:
        stream = self._stream if self._stream is not None else sys.stderr
        stream.write(text + "\n")
        stream.flush()
