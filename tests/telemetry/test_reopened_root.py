"""Which root span a resume ends again (``open_root`` over a run's journal records), and how
``Telemetry.run_span(reopen=...)`` opens it: the ids, parent, start and links it had; a
provider that cannot give a span an id says so and falls back to a new root under the old.
(tests/telemetry/test_crash_trace.py does it end to end, with killed processes.)"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

import pytest
from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.trace import Link, Span, SpanKind
from opentelemetry.util.types import Attributes

from regiment.hierarchy.run._trace import open_root
from regiment.journal import Entry, EventRecorded, Record, RunCreated, RunResumed
from regiment.telemetry import OpenRoot, SpanCollector, Telemetry, parent_traceparent

T = "4bf92f3577b34da6a3ce929d0e0e4736"
FIRST = f"00-{T}-00f067aa0ba902b7-01"
LATER = f"00-{T}-53995c3f42cd8ad8-01"
CALLER = f"00-{T}-b7ad6b7169203331-01"
AT = datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=UTC)


def _entries(*records: Record) -> list[Entry]:
    return [Entry(seq=n, record=r, recorded_at=AT) for n, r in enumerate(records, 1)]


def _created(trace: str | None, parent: str | None = None) -> RunCreated:
    return RunCreated(
        run_id="r",
        team="t",
        config_hash="h",
        goal="g",
        created_at=AT,
        trace=trace,
        trace_parent=parent,
    )


def _resumed(number: int, trace: str | None, parent: str | None = None) -> RunResumed:
    at = AT + timedelta(minutes=number)
    return RunResumed(run_id="r", number=number, trace=trace, trace_parent=parent, resumed_at=at)


def _event(kind: str) -> EventRecorded:
    return EventRecorded(run_id="r", kind=kind, event={})


def test_a_killed_runs_first_root_is_open() -> None:
    found = open_root(_entries(_created(FIRST, CALLER), _event("PlanCreated")))
    assert found == OpenRoot(traceparent=FIRST, parent=CALLER, started=AT)


def test_a_resume_killed_too_took_the_same_root_over() -> None:
    records = (_created(FIRST), _resumed(1, FIRST), _event("StepStarted"))
    found = open_root(_entries(*records))
    assert found == OpenRoot(
        traceparent=FIRST, parent=None, started=AT, resumes=((1, AT + timedelta(minutes=1)),)
    )


def test_a_root_its_process_ended_is_not_reopened() -> None:
    for end in ("RunCompleted", "RunFailed"):  # paused, or stopped unfinished (its cluster)
        assert open_root(_entries(_created(FIRST), _event(end))) is None


def test_after_a_pause_the_resumes_own_root_is_the_open_one() -> None:
    records = (_created(FIRST), _event("RunCompleted"), _resumed(1, LATER, FIRST))
    found = open_root(_entries(*records))
    assert found == OpenRoot(traceparent=LATER, parent=FIRST, started=AT + timedelta(minutes=1))


def test_an_untraced_process_neither_opens_nor_ends_a_root() -> None:
    # Its run ended (paused) with no span: the first process's root is still the open one.
    records = (_created(FIRST), _resumed(1, None), _event("RunCompleted"))
    assert open_root(_entries(*records)) == OpenRoot(traceparent=FIRST, parent=None, started=AT)
    assert open_root(_entries(_created(None), _event("PlanCreated"))) is None


def _root(telemetry: Telemetry, reopen: OpenRoot, number: int = 2) -> str | None:
    """Open and end the resumed root; its parent's ``traceparent``, as the resume journals it."""
    resume = (number, FIRST)
    with telemetry.run_span("t", "r", "g", resume=resume, reopen=reopen) as span:
        return parent_traceparent(span)


def test_a_later_root_is_reopened_under_and_linked_to_the_first() -> None:
    collector = SpanCollector()
    provider = TracerProvider(shutdown_on_exit=False)
    provider.add_span_processor(collector)
    earlier = ((1, AT + timedelta(minutes=1)),)
    reopen = OpenRoot(traceparent=LATER, parent=FIRST, started=AT, resumes=earlier)
    resumer = trace.get_tracer("caller", tracer_provider=provider)
    with resumer.start_as_current_span("POST /runs/r/resume") as request:  # its own trace
        parent = _root(Telemetry(provider), reopen)
    (root,) = [s for s in collector.spans() if s.name == "invoke_agent t"]
    assert format(root.context.span_id, "016x") == LATER.split("-")[2]
    assert format(root.context.trace_id, "032x") == T
    assert root.parent is not None
    assert format(root.parent.span_id, "016x") == FIRST.split("-")[2]
    assert parent == FIRST  # what the resume journals as its parent
    assert root.start_time == 1767323045678901000  # AT, in nanoseconds
    assert root.attributes is not None
    assert root.attributes["regiment.run.resume"] == 2
    first, by = root.links
    assert format(first.context.span_id, "016x") == FIRST.split("-")[2]
    assert first.attributes == {"regiment.run.resume": 2}
    assert by.context.span_id == request.get_span_context().span_id
    assert by.attributes == {"regiment.run.resumed_by": True}
    events = [(e.name, dict(e.attributes or {}), e.timestamp) for e in root.events]
    assert events[0] == ("regiment.run.resumed", {"regiment.run.resume": 1}, 1767323105678901000)
    assert events[1][:2] == ("regiment.run.resumed", {"regiment.run.resume": 2})
    assert len(events) == 2
    # Our tracer (the provider's, shared) still makes new ids.
    with Telemetry(provider).run_span("t", "r2", "g") as fresh:
        assert format(fresh.get_span_context().span_id, "016x") != LATER.split("-")[2]
    provider.shutdown()


class _Wrapped(trace.Tracer):
    """A tracer that is not the SDK's (as another SDK's or a wrapper's would be)."""

    def __init__(self, inner: trace.Tracer) -> None:
        self._inner = inner

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
        return self._inner.start_span(name, context, kind, attributes, links, start_time)

    def start_as_current_span(self, *args: object, **kwargs: object) -> object:  # type: ignore[override]
        raise NotImplementedError


class _Provider(trace.TracerProvider):
    def __init__(self, inner: TracerProvider) -> None:
        self._inner = inner

    def get_tracer(self, *args: object, **kwargs: object) -> trace.Tracer:
        return _Wrapped(self._inner.get_tracer("regiment"))


def test_a_provider_that_cannot_give_an_id_says_so_and_makes_a_new_root(
    caplog: pytest.LogCaptureFixture,
) -> None:
    collector = SpanCollector()
    provider = TracerProvider(shutdown_on_exit=False)
    provider.add_span_processor(collector)
    reopen = OpenRoot(traceparent=FIRST, parent=None, started=AT)
    with caplog.at_level(logging.INFO, logger="regiment.telemetry"):
        _root(Telemetry(_Provider(provider)), reopen, number=1)
    (root,) = collector.spans()
    assert format(root.context.span_id, "016x") != FIRST.split("-")[2]
    assert root.parent is not None  # under the lost first root, as before
    assert format(root.parent.span_id, "016x") == FIRST.split("-")[2]
    (said,) = [r for r in caplog.records if r.name == "regiment.telemetry"]
    assert said.levelno == logging.INFO
    assert "cannot give a span the id it had" in said.getMessage()
    provider.shutdown()


def test_a_journal_time_without_a_zone_is_read_as_utc() -> None:
    collector = SpanCollector()
    provider = TracerProvider(shutdown_on_exit=False)
    provider.add_span_processor(collector)
    naive = AT.replace(tzinfo=None)
    _root(Telemetry(provider), OpenRoot(traceparent=FIRST, parent=None, started=naive), 1)
    (root,) = collector.spans()
    assert root.start_time == 1767323045678901000
    assert root.parent is None
    provider.shutdown()
