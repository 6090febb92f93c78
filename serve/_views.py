"""What the routes answer about a run, as JSON-ready values."""

from __future__ import annotations

import msgspec

from regiment.hierarchy import RunFailed
from regiment.tools import ApprovalRequest

from ._registry import RunRecord

__all__ = ("approval_view", "run_summary", "run_view")


def run_summary(record: RunRecord) -> dict[str, object]:
    """A run in ``GET /runs``."""
    return {
        "run_id": record.run_id,
        "goal": record.goal,
        "session": record.session,
        "status": record.status,
    }


def run_view(record: RunRecord) -> dict[str, object]:
    """A run in ``GET /runs/{run_id}``: its summary, and its result once it has one.

    ``output`` maps each committed step to its output; ``events`` is how many
    events the run has emitted so far (``GET .../events`` streams them).
    """
    view = run_summary(record) | {"error": record.error, "events": len(record.events)}
    result = record.result
    if result is None:
        return view | _failed_view(record)
    return view | {
        "answer": result.answer,
        "output": {step_id: result.output_of(step_id) for step_id in result.committed},
        "usage": msgspec.to_builtins(result.usage),
        "plans": msgspec.to_builtins(result.plans),
        "steps": msgspec.to_builtins(result.steps),
        "committed": list(result.committed),
        "model_calls": result.model_calls,
        "tool_calls": result.tool_calls,
        "budget_exhausted": result.budget_exhausted,
        "trace_id": result.trace_id,
    }


def _failed_view(record: RunRecord) -> dict[str, object]:
    """A run with no result: what its ``RunFailed`` says it got to (plans, steps,
    usage, ...); nothing while it runs, or when the ``RunFailed`` is the app's own (a
    run it cancelled: the engine's tally never reached it)."""
    last = record.events[-1] if record.events else None
    if not isinstance(last, RunFailed) or not (last.plans or last.model_calls):
        return {"answer": None, "output": None, "usage": None, "plans": [], "steps": []}
    done: dict[str, str] = {}
    for report in last.steps:  # as RunResult.output_of reads them
        if report.status == "done":
            done.setdefault(report.step_id, report.output)
    return {
        "answer": None,
        "output": {step_id: done[step_id] for step_id in last.committed if step_id in done},
        "usage": msgspec.to_builtins(last.usage),
        "plans": msgspec.to_builtins(last.plans),
        "steps": msgspec.to_builtins(last.steps),
        "committed": list(last.committed),
        "model_calls": last.model_calls,
        "tool_calls": last.tool_calls,
        "budget_exhausted": last.budget_exhausted,
        "trace_id": last.trace_id,
    }


def approval_view(request: ApprovalRequest) -> dict[str, object]:
    """A pending request as ``GET /approvals`` lists it."""
    return {
        "request_id": request.request_id,
        "run_id": request.run_id,
        "worker": request.worker,
        "step_id": request.step_id,
        "tool": request.tool_name,
        "arguments": request.arguments,
        "idempotency_key": request.idempotency_key,
        "expires_at": request.expires_at,
    }
