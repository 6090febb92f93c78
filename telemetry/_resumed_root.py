"""A resumed run's root span: the one its killed process left open, reopened with its ids
(:mod:`._reopen`), or a new one in the run's trace; and before it, the spans that process
left open under it, ended as interrupted (:mod:`._interrupted`)."""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import TYPE_CHECKING

from opentelemetry import trace
from opentelemetry.trace import Link, Span
from opentelemetry.util.types import AttributeValue

from regiment._version import __version__
from regiment.telemetry import _semconv as sc
from regiment.telemetry._open_root import OpenRoot, resumer_links
from regiment.telemetry._propagation import extract_context
from regiment.telemetry._scope import open_span

if TYPE_CHECKING:
    from regiment.telemetry._telemetry import Telemetry

__all__ = ("resumed_root",)

_SCOPE = ("regiment", __version__)  # the instrumentation scope (Telemetry's)


def resumed_root(
    telemetry: Telemetry,
    name: str,
    attributes: dict[str, AttributeValue],
    resume: tuple[int, str | None],
    reopen: OpenRoot | None,
) -> AbstractContextManager[Span]:
    """The root span ``name`` of a resumed run (``resume``: which resume, and its first
    root's ``traceparent``); ``reopen``: the root its killed process left open."""
    if reopen is not None:
        # (the SDK: loaded on a resume after a crash only)
        from regiment.telemetry._interrupted import end_interrupted
        from regiment.telemetry._reopen import reopened_root

        provider = telemetry.tracer_provider
        run_id = str(attributes.get(sc.REGIMENT_RUN_ID, ""))
        tracer = provider.get_tracer(*_SCOPE)
        if reopen.nested:  # its root too: this resume's is a new one, under the step now
            end_interrupted(tracer, run_id, reopen, (name, dict(attributes)))
        else:
            end_interrupted(tracer, run_id, reopen)
            span = (name, attributes, telemetry.recorder.capture)
            scope = reopened_root(provider, _SCOPE, span, resume, reopen)
            if scope is not None:
                return scope
    return _continued(telemetry, name, attributes, resume)


def _continued(
    telemetry: Telemetry,
    name: str,
    attributes: dict[str, AttributeValue],
    resume: tuple[int, str | None],
) -> AbstractContextManager[Span]:
    """A resumed run's root span: in the first root's trace, linked to it (if it was traced).

    Both the span and the link carry ``regiment.run.resume`` (which resume it is).
    """
    number, first_root = resume
    attributes[sc.REGIMENT_RUN_RESUME] = number
    context = None if first_root is None else extract_context({"traceparent": first_root})
    first = None if context is None else trace.get_current_span(context).get_span_context()
    capture = telemetry.recorder.capture
    if first is None or not first.is_valid:  # the run was not traced before
        return open_span(telemetry.tracer, name, attributes=attributes, capture=capture)
    links = [Link(first, {sc.REGIMENT_RUN_RESUME: number}), *resumer_links(first.trace_id)]
    return open_span(
        telemetry.tracer, name, attributes=attributes, context=context, capture=capture, links=links
    )
