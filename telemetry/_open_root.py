"""What the journal keeps of a run's root span that no process ended (its process died)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from opentelemetry import trace
from opentelemetry.trace import Link, NonRecordingSpan, Span, SpanContext

from regiment.telemetry import _semconv as sc
from regiment.telemetry._propagation import extract_context, headers_for

__all__ = (
    "OpenCall",
    "OpenRoot",
    "OpenStep",
    "parent_traceparent",
    "resumer_links",
    "span_context_of",
)


@dataclass(frozen=True, slots=True, kw_only=True)
class OpenStep:
    """A step's ``invoke_agent`` span a killed process left open: the step was dispatched
    (its span id journaled with it) and never reported. The spans that ended inside it (its
    ``chat`` and ``execute_tool`` spans) may have been exported, so the resume ends it,
    with that id, as interrupted, before the step runs again in a new span.

    Attributes:
        span_id: its span id, 16 hex digits (``StepDispatched.span``).
        worker, step_id, plan_version, attempt: the step, as dispatched.
        started: when its dispatch was journaled.
    """

    span_id: str
    worker: str
    step_id: str
    plan_version: int
    attempt: int
    started: datetime


@dataclass(frozen=True, slots=True, kw_only=True)
class OpenCall:
    """A tool call's ``execute_tool`` span a killed process left open (its intent, with
    the span id, journaled; no result): ended as interrupted under its step's span, which
    the same process left open (what the tool's body ended inside it has its parent).

    Attributes:
        span_id: its span id, 16 hex digits (``ToolCallStarted.span``).
        step_span_id: its step's span id (an :class:`OpenStep`'s).
        tool, call_id: the call.
        started: when its intent was journaled.
    """

    span_id: str
    step_span_id: str
    tool: str
    call_id: str
    started: datetime


@dataclass(frozen=True, slots=True, kw_only=True)
class OpenRoot:
    """A run's root span that was started and never ended: its process died, so it was
    never exported, while the spans under it that had ended were. The resume that
    finishes the run ends it (``Telemetry.run_span(reopen=...)``), with these ids.

    Attributes:
        traceparent: the span's own W3C ``traceparent`` (journaled as it started).
        parent: its parent's ``traceparent`` (a caller's span, or the first root of a
            run that paused before); ``None``: it was the root of the trace.
        started: when it started (the run's creation, or the resume that opened it).
        resumes: the earlier resumes that took it over and died too: ``(number, when)``.
        steps: the step spans under it its last process left open (ended as interrupted).
        calls: the tool call spans inside those it left open (ended as interrupted too).
        nested: a nested run's root: ended as interrupted too (its resume's root is a new
            span, under the step it serves now), not reopened.
    """

    traceparent: str
    parent: str | None
    started: datetime
    resumes: tuple[tuple[int, datetime], ...] = ()
    steps: tuple[OpenStep, ...] = ()
    calls: tuple[OpenCall, ...] = ()
    nested: bool = False


def span_context_of(traceparent: str | None) -> SpanContext | None:
    """The span a W3C ``traceparent`` names, or ``None`` if it names none."""
    if traceparent is None:
        return None
    found = trace.get_current_span(extract_context({"traceparent": traceparent}))
    context = found.get_span_context()
    return context if context.is_valid else None


def resumer_links(trace_id: int) -> list[Link]:
    """A link to whoever resumed the run (an HTTP request's span, a span of the caller's)
    when that span is in another trace than the run's, ``trace_id``: the resumed root's
    parent is of the run's trace, so the resumer is reached through a link of its own."""
    resumer = trace.get_current_span().get_span_context()
    if resumer.is_valid and resumer.trace_id != trace_id:
        return [Link(resumer, {sc.REGIMENT_RUN_RESUMED_BY: True})]
    return []


def parent_traceparent(span: Span) -> str | None:
    """The W3C ``traceparent`` of ``span``'s parent (a caller's span), journaled with a
    run's root span so that a resume can end that span where it began; ``None`` when it
    has none (the root of its trace), or the span does not say (not the SDK's)."""
    parent = getattr(span, "parent", None)
    if not isinstance(parent, SpanContext) or not parent.is_valid:
        return None
    return headers_for(NonRecordingSpan(parent)).get("traceparent")
