"""A step's span id, chosen as the step is dispatched: journaled with its dispatch, so a
resume can end the span a killed process left open (see :mod:`._interrupted`).

The planner picks the id (:func:`step_span_headers`) and sends it in the step's envelope
headers (``regiment-step-span``), beside its ``traceparent``; the worker's
``invoke_agent`` span takes it (``Telemetry.agent_span``). The OpenTelemetry API cannot
give a span its id, so that span is started with a copy of the SDK's tracer whose id
generator hands out the chosen id once (:class:`GivenSpanIds`). A provider that is not
the SDK's gives the span an id of its own: a resume then ends a span of the journaled id
that has no children (none is an orphan; it says which step was cut short).

Only a journaled, traced run's dispatches carry the header: no cost anywhere else.
"""

from __future__ import annotations

import copy
import random
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, final

from opentelemetry import trace

from regiment.telemetry._held import HeldEnds

if TYPE_CHECKING:
    from opentelemetry.sdk.trace.id_generator import IdGenerator

    from regiment.telemetry._telemetry import Telemetry

__all__ = (
    "STEP_SPAN_HEADER",
    "GivenSpanIds",
    "chosen_child",
    "current_span_id",
    "step_ends",
    "step_span_headers",
)

STEP_SPAN_HEADER = "regiment-step-span"
"""The envelope header holding the id (16 hex digits) of the step's ``invoke_agent`` span."""


def step_span_headers(headers: Mapping[str, str]) -> tuple[str, dict[str, str]]:
    """A new span id for a step (16 hex digits, never the invalid 0) and ``headers``
    with it added, to send the step with."""
    span_id = _new_id()
    return span_id, {**headers, STEP_SPAN_HEADER: span_id}


def chosen_child() -> tuple[str, str, str] | None:
    """For a span to start under the current one (a nested run's root, under the step it
    serves) with an id chosen now, journaled before it starts: that id (16 hex digits),
    the span's ``traceparent`` and its parent's; ``None`` when nothing is traced here."""
    parent = trace.get_current_span()
    context = parent.get_span_context()
    if not context.is_valid or not parent.is_recording():
        return None
    span_id, flags = _new_id(), f"{int(context.trace_flags):02x}"
    own = f"00-{context.trace_id:032x}-{span_id}-{flags}"
    return span_id, own, f"00-{context.trace_id:032x}-{context.span_id:016x}-{flags}"


def current_span_id(name: str) -> str | None:
    """The id (16 hex digits) of the current span if it records and is named ``name`` (a
    tool call's ``execute_tool`` span, journaled with the call's intent); else ``None``."""
    span = trace.get_current_span()
    if not span.is_recording() or getattr(span, "name", None) != name:
        return None
    return f"{span.get_span_context().span_id:016x}"


def step_ends(telemetry: Telemetry) -> HeldEnds:
    """Where ``telemetry``'s step spans of a journaled run wait for their reports' commits."""
    return telemetry._given.held


def _new_id() -> str:
    return f"{random.getrandbits(64) or 1:016x}"


@final
class GivenSpanIds:
    """One ``Telemetry``'s tracer whose next span takes a given id: a copy of the SDK
    tracer ``source`` gives (its provider's, resolved on first use: a global provider
    installed after the ``Telemetry`` was made counts)."""

    __slots__ = ("_base", "_ids", "_made", "_next", "_source", "held")

    def __init__(self, source: Callable[[], trace.Tracer]) -> None:
        self._source = source
        self._made = False
        self._base: trace.Tracer | None = None  # the copy; None: the tracer is not the SDK's
        self._ids: IdGenerator | None = None  # the SDK tracer's own generator
        self._next = 0
        self.held = HeldEnds()  # the copy's processor: a run's step spans wait in it

    def tracer(self, tracer: trace.Tracer, span_id: str) -> trace.Tracer:
        """The tracer to start the next span with so that it gets ``span_id``: the copy, or
        ``tracer`` itself when it cannot be (the provider is not the SDK's, or ``span_id`` is
        not 16 hex digits: a header someone else set)."""
        if not self._made:
            self._made = True
            self._base = self._copy(self._source())
        given = parsed_span_id(span_id)
        if self._base is None or given == 0:
            return tracer
        self._next = given
        return self._base

    def _copy(self, tracer: trace.Tracer) -> trace.Tracer | None:
        from opentelemetry.sdk.trace import Tracer as SdkTracer  # an SDK's run only

        if not isinstance(tracer, SdkTracer):
            return None
        fixed = copy.copy(tracer)  # its processors, sampler, resource and limits
        self.held.inner = tracer.span_processor
        fixed.span_processor = self.held  # type: ignore[assignment]  # (one by its methods)
        self._ids = tracer.id_generator
        fixed.id_generator = self  # type: ignore[assignment]  # (an IdGenerator by its methods)
        return fixed

    # The SDK's IdGenerator, as the copy calls it: the given id once, then its own.
    def generate_span_id(self) -> int:
        given, self._next = self._next, 0
        assert self._ids is not None  # (set with the copy that calls this)
        return given or self._ids.generate_span_id()

    def generate_trace_id(self) -> int:
        assert self._ids is not None
        return self._ids.generate_trace_id()

    def is_trace_id_random(self) -> bool:
        assert self._ids is not None
        return self._ids.is_trace_id_random()


def parsed_span_id(span_id: str) -> int:
    """The span id ``span_id`` (16 hex digits) names; 0 (no span) if it is not one."""
    if len(span_id) != 16:
        return 0
    try:
        return int(span_id, 16)
    except ValueError:
        return 0
