"""What the routes answer about a run, as JSON-ready values."""

from __future__ import annotations

import msgspec

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
        return view | {"answer": None, "output": None, "usage": None, "plans": [], "steps": []}
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
