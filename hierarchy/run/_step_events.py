"""The events a run's book emits for a step's report, and for a failed run's end."""

from __future__ import annotations

from regiment.errors import LeaseLost
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

__all__ = ("check_failed", "errored", "failed", "report_events", "share_refused")


def share_refused(run_id: str, report: StepReport) -> BudgetExhausted:
    detail = (
        f"step {report.step_id}: {report.refused_tool_calls} tool call(s) refused, "
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
    lost = isinstance(error.__cause__, LeaseLost)
    return tally.as_failed("LeaseLost" if lost else type(error).__name__, str(error))


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
