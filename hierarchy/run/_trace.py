"""The run's trace: its root span, and what the planner records on its spans."""

from __future__ import annotations

import contextlib
import dataclasses
import logging
from collections.abc import Iterable
from contextlib import AbstractContextManager
from datetime import datetime
from types import TracebackType
from typing import TYPE_CHECKING, final

import anyio
from opentelemetry.trace import Span

from regiment.errors import RunCancelled, RunError
from regiment.hierarchy._messages import StepReport
from regiment.hierarchy.run._channel import RunChannel
from regiment.journal import (
    Entry,
    EventRecorded,
    RunCreated,
    RunResumed,
    StepDispatched,
    StepReported,
    ToolCallFinished,
    ToolCallStarted,
)
from regiment.telemetry import (
    OpenCall,
    OpenRoot,
    OpenStep,
    SpanScope,
    Telemetry,
    headers_for,
    leave_open,
    parent_traceparent,
)
from regiment.telemetry import semconv as sc

if TYPE_CHECKING:
    from regiment.hierarchy._team import Team
    from regiment.hierarchy.run._journaling import RunJournal

_log = logging.getLogger("regiment.telemetry")

__all__ = (
    "PausedCut",
    "RunTrace",
    "PausedRoot",
    "open_root",
    "record_run_end",
    "root_trace",
    "run_root",
)

# The events a run's journal ends a process's holding of the run with; its root span ends
# right after (a pause ends it too: a resume opens a new one, under the first).
_ENDS = frozenset({"RunCompleted", "RunFailed"})
# Entered by each planner-side call of an untraced run: one for all (it keeps no state).
_NOT_IN_RUN: AbstractContextManager[None] = contextlib.nullcontext()


def run_root(
    telemetry: Telemetry, team: Team, run: tuple[str, str, str | None], resumed: RunJournal | None
) -> SpanScope:
    """The root span of run ``run`` (id, goal, session) of ``team``; ``resumed``: the run's
    journal when it is resumed (its number and first root, and the root span its crash left
    open, ended by this run)."""
    run_id, goal, session = run
    resume, reopen = (resumed.resume, resumed.open_root) if resumed else (None, None)
    provider = team.planner.model.provider
    return telemetry.run_span(
        team.name, run_id, goal, provider=provider, session_id=session, resume=resume,
        reopen=reopen, span_id=resumed.root_span if resumed else None,
    )  # fmt: skip


def open_root(entries: Iterable[Entry]) -> OpenRoot | None:
    """The root span of the run these are the records of, if the last process that traced
    it started that span and never ended it: it died before the run's last event was
    journaled. ``None`` when that span ended (the run paused, or stopped unfinished), or
    the run was not traced."""
    root: OpenRoot | None = None
    traced = False  # whether the process that took the run over last traced it
    # The step (and tool call) spans that process opened and did not end (each resume ends
    # its dead one's).
    steps: dict[tuple[int, str, int], OpenStep] = {}
    calls: dict[tuple[int, str, int], tuple[ToolCallStarted, str, datetime]] = {}
    for entry in entries:
        match entry.record:
            case RunCreated(trace=str(own), trace_parent=parent, created_at=at):
                root, traced = OpenRoot(traceparent=own, parent=parent, started=at), True
            case RunResumed(trace=str(own), trace_parent=parent, number=number, resumed_at=at):
                traced = True
                if root is not None and own == root.traceparent:  # it took that span over
                    root = dataclasses.replace(root, resumes=(*root.resumes, (number, at)))
                else:
                    root = OpenRoot(traceparent=own, parent=parent, started=at)
            case RunCreated() | RunResumed():  # not traced: it neither opened nor ended one
                traced = False
            case EventRecorded(kind=kind) if traced and kind in _ENDS:
                root = None
            case StepDispatched(span=str(span)) as sent:
                key = (sent.plan_version, sent.step_id, sent.attempt)
                steps[key] = _open_step(sent, span, entry.recorded_at)
            case StepReported(plan_version=version, step_id=step, attempt=attempt):
                steps.pop((version, step, attempt), None)
            case ToolCallStarted(span=str(span)) as intent:
                key = (intent.plan_version, intent.step_id, intent.call_index)
                calls[key] = (intent, span, entry.recorded_at)
            case ToolCallFinished(plan_version=version, step_id=step, call_index=index):
                calls.pop((version, step, index), None)
        if isinstance(entry.record, RunCreated | RunResumed):
            steps, calls = {}, {}
    if root is not None and steps:
        inside = _open_calls(steps, calls.values())
        root = dataclasses.replace(root, steps=tuple(steps.values()), calls=inside)
    return root


def _open_calls(
    steps: dict[tuple[int, str, int], OpenStep],
    calls: Iterable[tuple[ToolCallStarted, str, datetime]],
) -> tuple[OpenCall, ...]:
    """The tool calls in flight in the open ``steps`` (a call's step: its last attempt)."""
    by_step = {
        (version, step): open_step.span_id for (version, step, _), open_step in steps.items()
    }
    return tuple(
        OpenCall(
            span_id=span,
            step_span_id=by_step[(intent.plan_version, intent.step_id)],
            tool=intent.tool,
            call_id=intent.call_id,
            started=at,
        )
        for intent, span, at in calls
        if (intent.plan_version, intent.step_id) in by_step
    )


def _open_step(sent: StepDispatched, span: str, at: datetime) -> OpenStep:
    return OpenStep(
        span_id=span,
        worker=sent.worker,
        step_id=sent.step_id,
        plan_version=sent.plan_version,
        attempt=sent.attempt,
        started=at,
    )


def root_trace(span: Span) -> tuple[str | None, str | None]:
    """The W3C ``traceparent`` of a run's root span and of its parent (if it has one), as
    the journal keeps them: a resume continues the trace, and after a crash ends the span
    where it began."""
    return headers_for(span).get("traceparent"), parent_traceparent(span)


@final
class RunTrace:
    """One run's root span and the telemetry handle its planner opens spans with."""

    def __init__(self, telemetry: Telemetry, run_span: Span) -> None:
        self.telemetry = telemetry
        self.span = run_span
        # Every span of the run's planner hangs off the run span explicitly: the
        # ambient context of a handler is whichever message came in last. Not
        # tracing, the run span is the invalid one: it has no headers to make.
        self.headers = headers_for(run_span) if telemetry.tracing else {}

    def in_run(self) -> AbstractContextManager[None]:
        """Make the run span current (for spans the planner opens itself)."""
        if not self.headers:  # not tracing: there is no run span to hang spans off
            return _NOT_IN_RUN
        return self.telemetry.propagator.activate(self.headers)

    def stale_report(self, report: StepReport, *, current_version: int) -> None:
        """Note on the run span that a report of an older plan version was dropped."""
        if self.telemetry.metrics is not None:
            self.telemetry.metrics.stale_report()
        self.telemetry.recorder.stale_report(
            self.span,
            step_id=report.step_id,
            report_version=report.plan_version,
            current_version=current_version,
        )

    def budget_exhausted(self, limit: str, step_id: str | None = None) -> None:
        """Note on the run span that a budget limit was reached (with ``step_id``: only
        that step's share of it, a tool call was refused; the run goes on)."""
        if not self.span.is_recording():
            return
        attributes = {sc.REGIMENT_BUDGET_LIMIT: limit}
        if step_id is not None:
            attributes[sc.REGIMENT_STEP_ID] = step_id
        self.span.add_event(sc.BUDGET_EXHAUSTED_EVENT, attributes)


def record_run_end(telemetry: Telemetry, span: Span, channel: RunChannel) -> None:
    """Record how a run ended on its root span (its error, or its result's counts)."""
    if not span.is_recording():  # not traced: nothing to tell the span
        return
    error: RunError | None = None
    result = channel.result
    if result is None:
        error = channel.error or RunCancelled("the run ended without a result")
        result = channel.tally  # what the run did before it failed, if it got that far
    status = "failed" if error is not None or result is None else result.status
    if isinstance(error, RunCancelled):
        status = "cancelled"  # as the journal, the service and the command call it
    telemetry.recorder.run_end(
        span,
        status=status,
        plan_versions=len(result.plans) if result else 0,
        stale_dropped=result.stale_reports_dropped if result else 0,
        usage=result.usage if result else None,
        model_calls=result.model_calls if result else None,
        tool_calls=result.tool_calls if result else None,
        steps=len(result.steps) if result else None,
        error=error,
    )
    if result is not None and result.budget_exhausted is not None and span.is_recording():
        span.set_attribute(sc.REGIMENT_BUDGET_EXHAUSTED, result.budget_exhausted)


@final
class PausedCut(AbstractContextManager["PausedCut"]):
    """Around a nested run's root span's body: the cancellation that ends a run which
    paused with the step it serves is held (the span ends as paused, not cancelled),
    and raised again by :meth:`release` once the span has ended."""

    __slots__ = ("channel", "held")

    def __init__(self) -> None:
        self.channel: RunChannel | None = None  # the run's, once it has one
        self.held: BaseException | None = None

    def __exit__(self, kind: object, exc: BaseException | None, tb: object) -> bool:
        result = None if self.channel is None else self.channel.result
        if result is None or result.status != "paused":
            return False
        if not isinstance(exc, anyio.get_cancelled_exc_class()):
            return False
        self.held = exc
        return True

    def release(self) -> None:
        """Raise the held cancellation, if there is one."""
        if self.held is not None:
            raise self.held


def _left_open(scope: AbstractContextManager[Span], run_id: str) -> None:
    """Leave the root span of run ``run_id``, whose end the journal could not record, open:
    ended (and exported) here, it would be ended again, with the same ids, by the resume
    that finishes the run (the journal says it never ended), so the trace held it twice."""
    if leave_open(scope):
        _log.info(
            "run %s: its end could not be journaled, so its root span is left open (not "
            "exported): the resume that finishes the run ends it, with its ids",
            run_id,
        )


@final
class PausedRoot:
    """A run's root span ``scope`` that ends as paused, not cancelled, when the run (a
    nested one) paused with its step: set ``hold.channel`` to the run's channel. A class,
    not ``@contextmanager``: every run enters one."""

    __slots__ = ("_scope", "hold")

    def __init__(self, scope: AbstractContextManager[Span]) -> None:
        self._scope = scope
        self.hold = PausedCut()

    def __enter__(self) -> tuple[Span, PausedCut]:
        return self._scope.__enter__(), self.hold

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> bool | None:
        channel = self.hold.channel
        if channel is not None and channel.journal is not None and channel.journal.unrecorded:
            _left_open(self._scope, channel.journal.run_id)
        if not self.hold.__exit__(kind, exc, tb):
            return self._scope.__exit__(kind, exc, tb)
        self._scope.__exit__(None, None, None)  # the span ends as paused ...
        self.hold.release()  # ... then the run's cancellation goes on
        return None
