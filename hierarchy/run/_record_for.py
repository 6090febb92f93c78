"""The journal record a run's change implies (``RunJournal.note``), if any."""

from __future__ import annotations

from typing import TYPE_CHECKING

import msgspec

from regiment.errors import ClusterLost, RunCancelled
from regiment.hierarchy._messages import StepReport
from regiment.hierarchy.run._changes import (
    ApprovalAnswered,
    ApprovalAsked,
    CheckRejected,
    PlanAdopted,
    ReportDropped,
    RunAborted,
    RunChange,
    RunFinished,
    StepCommitted,
    StepEnded,
    StepSent,
    ToolCallsRefused,
)
from regiment.journal import (
    ApprovalDecided,
    ApprovalRequested,
    PlanVersion,
    Record,
    StepDispatched,
    StepReported,
)
from regiment.journal import RunFinished as JournalFinished

if TYPE_CHECKING:
    from regiment.hierarchy._result import RunResult

__all__ = ("record_for",)


def record_for(run_id: str, change: RunChange, result: RunResult | None) -> Record | None:
    match change:
        case PlanAdopted(plan=plan):
            body = msgspec.to_builtins(plan)
            return PlanVersion(run_id=run_id, version=plan.version, plan=body)
        case StepSent(assign=assign, worker=worker, span=span):
            return StepDispatched(
                run_id=run_id,
                plan_version=assign.plan_version,
                step_id=assign.step.id,
                worker=worker,
                attempt=assign.attempt,
                span=span,
            )
        case StepCommitted(report=report):
            return _reported(run_id, report, committed=True)
        case (
            StepEnded(report=report)
            | CheckRejected(report=report)
            | ToolCallsRefused(report=report)
            | ReportDropped(report=report)
        ):
            return _reported(run_id, report, committed=False)
        case ApprovalAsked(request=request, journaled=False):
            return ApprovalRequested(
                run_id=run_id,
                approval_id=request.request_id,
                plan_version=request.plan_version,
                step_id=request.step_id,
                call_index=request.call_index,
                request=request,
            )
        case ApprovalAnswered(request=request, decision=decision, by=by, journaled=False):
            return ApprovalDecided(
                run_id=run_id, approval_id=request.request_id, decision=decision, decided_by=by
            )
        case RunFinished(answer=answer, status=status):
            if status == "paused":
                return None  # not an end: the run lists as awaiting approval until resumed
            body = msgspec.to_builtins(result) if result is not None else {}
            return JournalFinished(run_id=run_id, status=status, answer=answer, result=body)
        case RunAborted(error=error) if not isinstance(error.__cause__, ClusterLost):
            message = f"{type(error).__name__}: {error}"
            # Stopped under a live run (Ctrl-C, the service's shutdown): cancelled, not failed.
            if isinstance(error, RunCancelled):
                return JournalFinished(run_id=run_id, status="cancelled", error=message)
            return JournalFinished(run_id=run_id, status="failed", error=message)
        case _:  # (a run whose Ray cluster went away stops unfinished: a resume finishes it)
            return None


def _reported(run_id: str, report: StepReport, *, committed: bool) -> StepReported:
    return StepReported(
        run_id=run_id,
        plan_version=report.plan_version,
        step_id=report.step_id,
        worker=report.worker,
        attempt=report.attempt,
        status=report.status,
        committed=committed,
        output=report.output,
        report=msgspec.to_builtins(report),
    )
