"""Ending, on a resume, the spans a killed process left open under its run's root span.

A process killed mid-step never ends (so never exports) the step's ``invoke_agent`` span,
while the ``chat`` and ``execute_tool`` spans that ended inside it were exported: without
their parent, a trace viewer shows them as orphans. The step's span id was chosen as it
was dispatched and journaled with the dispatch (:mod:`._step_ids`), so the resume ends that
span with its ids, its start (when the dispatch was journaled) and its parent (the run's
root), marked as interrupted: status ERROR, ``error.type=interrupted``,
``regiment.interrupted`` and an event of that name. The step then runs again, in a span
of its own. A nested run's root span its process left open is ended the same way (its
resume's root is a new span, under the step it serves now).

Imported on a resume only: it loads the OpenTelemetry SDK.
"""

from __future__ import annotations

import copy
import time

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.sdk.trace import Tracer as SdkTracer
from opentelemetry.trace import NonRecordingSpan, SpanContext, SpanKind
from opentelemetry.util.types import AttributeValue

from regiment.telemetry import _semconv as sc
from regiment.telemetry._attributes import agent_attributes, tool_attributes
from regiment.telemetry._open_root import OpenCall, OpenRoot, OpenStep, span_context_of
from regiment.telemetry._reopen import GivenIds, nanoseconds, parent_context
from regiment.telemetry._scope import mark_error
from regiment.telemetry._step_ids import parsed_span_id

__all__ = ("end_interrupted",)

_WHY = (
    "its process died with this span open; the resume that took the run over ended it "
    "and ran its work again"
)


def end_interrupted(
    tracer: trace.Tracer,
    run_id: str,
    root: OpenRoot,
    span: tuple[str, dict[str, AttributeValue]] | None = None,
) -> None:
    """End, as interrupted, the step spans ``root`` holds (its last process left them
    open), on ``tracer`` (the SDK's: else nothing can be ended with its ids); with ``span``
    (its name, attributes), ``root`` itself too: a nested run's."""
    own = span_context_of(root.traceparent)
    if own is None or not isinstance(tracer, SdkTracer):
        return
    now = time.time_ns()
    under = trace.set_span_in_context(NonRecordingSpan(own), Context())
    for step in root.steps:
        given = _step_context(own, step.span_id)
        if given is not None:
            attributes = _step_attributes(run_id, step)
            _end(tracer, given, (f"invoke_agent {step.worker}", attributes, under), step, now)
    for call in root.calls:
        given, step_context = (
            _step_context(own, call.span_id),
            _step_context(own, call.step_span_id),
        )
        if given is not None and step_context is not None:
            inside = trace.set_span_in_context(NonRecordingSpan(step_context), Context())
            name, attributes = f"execute_tool {call.tool}", _call_attributes(call)
            _end(tracer, given, (name, attributes, inside), call, now)
    if span is not None:
        name, attributes = span
        parent = parent_context(root.parent)
        _end(tracer, own, (name, attributes, parent), root, now)


def _step_context(root: SpanContext, span: str) -> SpanContext | None:
    """The span of id ``span`` (16 hex digits) in ``root``'s trace; ``None`` if none is."""
    span_id = parsed_span_id(span)
    if span_id == 0:  # (none, or a hand-made record: nothing to end)
        return None
    return SpanContext(root.trace_id, span_id, False, root.trace_flags, root.trace_state)


def _step_attributes(run_id: str, step: OpenStep) -> dict[str, AttributeValue]:
    return agent_attributes(
        step.worker, None, run_id, step.step_id, step.plan_version, step.attempt
    )


def _call_attributes(call: OpenCall) -> dict[str, AttributeValue]:
    return tool_attributes(call.tool, call.call_id, sc.TOOL_TYPE_FUNCTION, None, None)


def _end(
    tracer: SdkTracer,
    own: SpanContext,
    span: tuple[str, dict[str, AttributeValue], Context],
    opened: OpenStep | OpenCall | OpenRoot,
    now: int,
) -> None:
    """Start the span ``own`` names (``span``: its name, attributes and parent) as it
    started (``opened.started``), and end it now as interrupted."""
    name, attributes, parent = span
    fixed = copy.copy(tracer)  # its processors, sampler, resource and limits; these ids
    fixed.id_generator = GivenIds(own)
    start = min(nanoseconds(opened.started), now)
    ended = fixed.start_span(name, parent, SpanKind.INTERNAL, attributes, None, start)
    if ended.is_recording():
        ended.set_attribute(sc.REGIMENT_INTERRUPTED, True)
        ended.add_event(sc.INTERRUPTED_EVENT, None, now)
        mark_error(ended, sc.ERROR_INTERRUPTED, _WHY, capture=True)  # (no user data in it)
    ended.end(now)
