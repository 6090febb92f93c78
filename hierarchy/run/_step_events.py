"""The events a run's book emits for a step's report, and for a failed run's end."""

from __future__ import annotations

from typing import TYPE_CHECKING

from regiment._text import counted
from regiment.errors import ClusterLost, LeaseLost, StepFailed
from regiment.hierarchy._messages import StepReport
from regiment.hierarchy._result import RunResult
from regiment.hierarchy.events import (
    BudgetExhausted,
    CheckFailed,
    Event,
    RunFailed,
    StepErrored,
    ToolFailed,
)
from regiment.hierarchy.run._guarding import note_events
from regiment.hierarchy.run._hints import resume_advice

if TYPE_CHECKING:
    from regiment.journal import Journal

__all__ = (
    "CLUSTER_LOST",
    "check_failed",
    "cluster_lost",
    "errored",
    "failed",
    "report_events",
    "share_refused",
)

CLUSTER_LOST = f"{ClusterLost.__module__}.{ClusterLost.__qualname__}"  # a report's error_type


def share_refused(run_id: str, report: StepReport) -> BudgetExhausted:
    detail = (
        f"step {report.step_id}: {counted(report.refused_tool_calls, 'tool call')} refused, "
        "its share of the tool-call budget was used up"
    )
    return BudgetExhausted(run_id=run_id, limit="tool_calls", detail=detail, step_id=report.step_id)


def check_failed(run_id: str, report: StepReport, check: str, reason: str) -> CheckFailed:
    return CheckFailed(
        run_id=run_id,
        plan_version=report.plan_version,
        step_id=report.step_id,
        check=check,
        reason=reason,
        usage=report.usage,
    )


def failed(tally: RunResult, error: BaseException) -> RunFailed:
    """The last event of a failed run: why, and what it got to (``tally``). A run taken
    over by another process says ``LeaseLost``, as a service's record of it does."""
    cause = error.__cause__
    if isinstance(cause, (LeaseLost, ClusterLost)):  # what a caller acts on: resume, or not
        return tally.as_failed(type(cause).__name__, str(error))
    return tally.as_failed(type(error).__name__, str(error))


def cluster_lost(report: StepReport, run_id: str, journal: Journal | None) -> StepFailed:
    """The error of a run whose step found its Ray cluster gone: no replan is spent (none
    could run anywhere); a run in a ``journal`` stops unfinished, so a resume finishes it."""
    detail = (report.error or "").removeprefix("ClusterLost: ")
    if journal is not None:
        then = (
            f"the run stopped unfinished and its journal is kept: start the cluster again "
            f"and resume it ({resume_advice(journal, run_id)}; its workers may run "
            "in-process too); a tool call that was in flight runs again under its same "
            "idempotency key"
        )
    else:
        then = "the run has no journal, so it cannot be resumed: run it again"
    error = StepFailed(
        f"step {report.step_id}: {detail}; {then}",
        step_id=report.step_id,
        worker=report.worker,
        cause=detail,
        fatal=True,
    )
    error.__cause__ = ClusterLost(detail)
    return error


def errored(run_id: str, report: StepReport) -> StepErrored:
    return StepErrored(
        run_id=run_id,
        plan_version=report.plan_version,
        step_id=report.step_id,
        worker=report.worker,
        status=report.status,
        error=report.error or "",
        usage=report.usage,
    )


def report_events(report: StepReport) -> list[Event]:
    """One ``ToolFailed`` per failed tool call in ``report``, in call order, then
    what its guardrails did."""
    events: list[Event] = [
        ToolFailed(
            run_id=report.run_id,
            plan_version=report.plan_version,
            step_id=report.step_id,
            worker=report.worker,
            tool=outcome.tool,
            call_id=outcome.call_id,
            error_type=outcome.error_type or "error",
            message=outcome.content if isinstance(outcome.content, str) else str(outcome.content),
        )
        for outcome in report.tool_outcomes
        if outcome.is_error
    ]
    if report.guardrails:
        events += note_events(report.run_id, report.guardrails)
    return events
