"""What the routes answer about a run, as JSON-ready values."""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from regiment._calls import call_counts
from regiment._text import shown
from regiment.errors import ApprovalError
from regiment.hierarchy import CheckFailed, Event, RunFailed, RunResult, StepCompleted
from regiment.journal import top_run_id
from regiment.tools import ApprovalDecision, ApprovalRequest, EditArguments

from ._http import ApiError
from ._registry import RunRecord

__all__ = ("LISTED_GOAL", "approval_view", "not_decided", "run_listed", "run_summary", "run_view")

LISTED_GOAL = 200
"""``GET /runs`` shows at most this many characters of a goal, then ``…``: a listing of
runs whose goals are long (up to 1 MiB each) stays small; ``GET /runs/{id}`` has it all."""


def run_listed(record: RunRecord) -> dict[str, object]:
    """A run in ``GET /runs``: its summary, with a long goal cut (see ``LISTED_GOAL``)."""
    summary = run_summary(record)
    if len(record.goal) > LISTED_GOAL:
        summary["goal"] = record.goal[:LISTED_GOAL] + "…"
    return summary


def run_summary(record: RunRecord) -> dict[str, object]:
    """A run as ``GET /runs/{run_id}`` begins it: id, whole goal, session and status."""
    return {
        "run_id": record.run_id,
        "goal": record.goal,
        "session": record.session,
        "status": record.status,
    }


def run_view(
    record: RunRecord, root: str = "", pending: Sequence[ApprovalRequest] = ()
) -> dict[str, object]:
    """A run in ``GET /runs/{run_id}``: its summary, and its result once it has one
    (``root``: the prefix the app is mounted at, for the routes it names).

    ``output`` maps each committed step to its output; ``events`` is how many
    events the run has emitted so far (``GET .../events`` streams them);
    ``pending_approvals`` the requests a paused run waits for now (``pending``);
    ``rejections`` why each step in ``rejected`` was (``"rejected by its check 'c':
    <reason>"``, as ``regiment show`` says it), a live run's so far too.
    """
    view = run_summary(record) | {"error": record.error, "events": len(record.events)}
    if record.notes:  # what of its journal could not be read (as `regiment show` notes it)
        view["not_shown"] = list(record.notes)
    view["pending_approvals"] = [approval_view(request) for request in pending]
    rejections = _rejections(record.events)
    result = record.result
    if result is not None:
        answer = result.answer if pending else _answer(record, result, root)
        return view | _got_to(answer, result, rejections)
    last = record.events[-1] if record.events else None
    # A failed or cancelled run: what its RunFailed says it got to; nothing while it runs,
    # or when the RunFailed is the app's own with no tally (the service failed driving
    # the run, or a cancelled run did not wind down in time: its actor was stopped).
    if isinstance(last, RunFailed) and (last.plans or last.model_calls):
        return view | _got_to(None, last, rejections)
    return view | {
        "answer": None,
        "output": None,
        "usage": None,
        "estimated_usage": None,
        "plans": [],
        "steps": [],
        "rejected": list(rejections),  # so far: a reader sees a rejected step while it runs
        "rejections": rejections,
        **call_counts(None),  # null before any end, as `regiment show --json` has them
    }


def _rejections(events: Sequence[Event]) -> dict[str, str]:
    """Why each step whose check rejected its output was, by step id, from the run's
    events: its last ``CheckFailed``, unless the step was run again and held since."""
    why: dict[str, str] = {}
    for event in events:
        if isinstance(event, CheckFailed):
            why.pop(event.step_id, None)  # the latest rejection last, as ``rejected`` orders
            why[event.step_id] = f"rejected by its check {event.check!r}: {event.reason}"
        elif isinstance(event, StepCompleted):
            why.pop(event.step_id, None)
    return why


def _answer(record: RunRecord, result: RunResult, root: str) -> str:
    """The run's answer; for a paused run listed ``stalled`` (the journal lists one with
    a request still pending ``paused``), what it waits for now: not "N approvals
    pending", as it said when it paused, but a resume."""
    if result.status != "paused" or record.status != "stalled":
        return result.answer
    run_id = record.run_id
    if (top := top_run_id(run_id)) is not None:  # its requests are its top run's to decide
        return (
            f"paused with run {top}, the run it serves (a nested team's run is not resumed "
            f"alone): it goes on when that run's approval requests are decided and it is "
            f"resumed (POST {root}/runs/{top}/resume)"
        )
    return (
        "paused, and its approval requests have all been decided since: it waits to be "
        f"resumed (POST {root}/runs/{run_id}/resume, or `regiment resume TEAM_FILE {run_id}`)"
    )


def _got_to(
    answer: str | None, got: RunResult | RunFailed, why: dict[str, str]
) -> dict[str, object]:
    """A run's answer and what it got to (``RunResult`` and ``RunFailed`` name it alike;
    ``why``: the run's rejections, see ``_rejections``)."""
    done: dict[str, str] = {}
    for report in got.steps:  # a step's output is its first "done" report's, as in output_of
        if report.status == "done":
            done.setdefault(report.step_id, report.output)
    return {
        "answer": answer,
        "output": {step_id: done[step_id] for step_id in got.committed if step_id in done},
        "usage": msgspec.to_builtins(got.usage),
        "estimated_usage": msgspec.to_builtins(got.estimated_usage),
        "plans": msgspec.to_builtins(got.plans),
        "steps": msgspec.to_builtins(got.steps),
        "committed": list(got.committed),
        "rejected": list(got.rejected),
        "rejections": {step_id: why.get(step_id, _REJECTED) for step_id in got.rejected},
        **call_counts(got),  # as `regiment show` counts them
        "budget_exhausted": got.budget_exhausted,
        "trace_id": got.trace_id,
    }


_REJECTED = "rejected by its check"
"""A rejected step whose ``CheckFailed`` the record lacks (not expected; said plainly)."""


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


def decided_view(
    request: ApprovalRequest,
    decision: ApprovalDecision,
    kind: str,
    by: str,
    events: str,
    live: bool,
) -> dict[str, object]:
    """What ``POST /approvals/{request_id}`` answers: the request as listed, and what was
    decided; an edit's ``arguments`` are the edited ones (as ``ApprovalResolved``'s are),
    the model's ``requested_arguments`` beside them.

    The call's ``tool_call`` guards still judge an edit before the tool runs, after this
    answer (``live``: its run goes on now; else at its resume): an edit's answer says so,
    ``"guarded": "pending"``, and ``verdict`` where what they made of it is read (the
    request's ``ApprovalResolved`` in the run's ``events``: ``guarded``, ``ran_arguments``,
    ``guard_reason``)."""
    view = {**approval_view(request), "decision": kind, "decided_by": by}
    if isinstance(decision, EditArguments):
        view["requested_arguments"] = request.arguments
        view["arguments"] = decision.arguments
        when = "before the tool runs" if live else "at the run's resume, before the tool runs"
        view["guarded"] = "pending"
        view["verdict"] = (
            f"the call's tool_call guards (if any) judge the edit {when}, and may rewrite or "
            f"refuse it: the ApprovalResolved event of request {request.request_id} in GET "
            f"{events} says what ran (guarded, ran_arguments, guard_reason)"
        )
    return view


_APPROVAL_STATUS = {
    "unknown": 404,
    "decided": 409,
    "ended": 409,
    "no_journal": 409,
    "invalid": 422,
}


def not_decided(exc: ApprovalError, request_id: str, kind: str, listed: str) -> ApiError:
    """What ``POST /approvals/{request_id}`` answers when the decision was refused
    (``listed``: where ``GET /approvals`` is, under the app's prefix)."""
    detail = str(exc)
    if exc.kind == "unknown":  # the CLI's hint does not fit here
        detail = f"no approval request {shown(request_id)}; GET {listed} lists the pending ones"
    elif exc.kind == "no_journal":  # it said "start the team with journal=...": code
        detail = (  # a service's user does not write
            f"the run of request {request_id!r} has paused, and this service keeps no "
            "journal to hold the decision for a resume (nor can it resume a run): serve "
            "with --journal PATH_OR_URL (or create_app(team, journal=...)) so paused runs "
            "can be decided and resumed"
        )
    return ApiError(_APPROVAL_STATUS.get(exc.kind, 422), f"cannot {kind}", detail)
