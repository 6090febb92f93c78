"""The ends ``regiment show`` gives the tool calls and steps a run began and its journal
never ended: made from the run's closing event's step reports by ``OpenEnds``, as the
events file of an interrupted ``regiment run`` and the service's stream of a cancelled run
have them; none while the run has no closing event (it runs, or its process died and no
resume went on with it): those are open, not cut by a report that does not exist."""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from regiment.hierarchy import OpenEnds
from regiment.hierarchy import events as ev
from regiment.journal import EventRecorded, Record

__all__ = ("CLOSING_REPORT", "OVER", "with_ends")

CLOSING_REPORT = "closing_report"
"""What a step's or a call's ``ended_by`` says of an end made from the closing event."""

OVER = ("completed", "partial", "failed", "cancelled")
"""A run's statuses once it has ended: a step it left without a report goes on no more
(a Ctrl-C can stop the team under the run before its steps report)."""

_CLOSINGS: dict[str, type[ev.RunCompleted | ev.RunFailed]] = {
    "RunCompleted": ev.RunCompleted,
    "RunFailed": ev.RunFailed,
}


def with_ends(
    steps: list[dict[str, object]],
    records: Sequence[Record],
    run_id: str,
    status: str,
    notes: list[str],
) -> list[dict[str, object]]:
    """``steps`` (``show``'s), each with ``ended_by``: ``"report"`` (its report is
    journaled), ``"closing_report"`` (ended as the run's closing event says: its
    ``status`` and ``error`` or ``output`` from there) or ``None`` (open); and each of
    their ``unfinished_calls`` with its ``outcome`` and ``ended_by`` (``None``: open).
    A closing event that cannot be read leaves them open, and ``notes`` says so."""
    closing = _closing(records, notes) if status in OVER else None
    for step in steps:
        going = step["status"] in ("dispatched", "awaiting_approval")
        step["ended_by"] = None if going else "report"
        calls = step["unfinished_calls"]
        assert isinstance(calls, list)
        for call in calls:
            call["outcome"], call["ended_by"] = None, None
        if closing is not None:
            _end(step, going, calls, closing, run_id)
    return steps


def _closing(records: Sequence[Record], notes: list[str]) -> ev.RunCompleted | ev.RunFailed | None:
    """The run's last ``RunCompleted`` or ``RunFailed``, as journaled (``None``: none); a
    pause's ``RunCompleted`` is no end (a run cancelled while paused has none after it)."""
    last = None
    for record in records:
        if isinstance(record, EventRecorded) and record.kind in _CLOSINGS:
            result = record.event.get("result")
            if not (isinstance(result, dict) and result.get("status") == "paused"):
                last = record
    if last is None:
        return None
    try:
        return msgspec.convert(last.event, _CLOSINGS[last.kind])
    except msgspec.ValidationError as exc:  # shown without the ends, and said so
        notes.append(
            f"its closing event ({last.kind}) could not be read ({exc}), so the steps and "
            "tool calls it ended are shown with no end"
        )
        return None


def _end(
    step: dict[str, object],
    going: bool,
    calls: list[dict[str, object]],
    closing: ev.RunCompleted | ev.RunFailed,
    run_id: str,
) -> None:
    """End ``step`` (if ``going``) and its ``calls`` as ``OpenEnds`` does from ``closing``,
    which pairs each call with its step's plan version (a replan can plan a step id
    again, and a scripted model's call ids repeat): one ``OpenEnds`` a step."""
    opened = OpenEnds(clock=float)  # (a duration is not shown: the journal has none)
    worker, step_id, version = str(step["worker"]), str(step["step_id"]), step["plan_version"]
    assert isinstance(version, int)
    opened.see(  # (also for a step that reported: its calls are of its version)
        ev.StepDispatched(
            run_id=run_id, plan_version=version, step_id=step_id, worker=worker, attempt=1
        )
    )
    for call in calls:
        arguments = call["arguments"]
        assert isinstance(arguments, dict)
        opened.see(
            ev.ToolCallStarted(
                run_id=run_id,
                worker=worker,
                step_id=step_id,
                tool=str(call["tool"]),
                call_id=str(call["call_id"]),
                arguments=arguments,
            )
        )
    outcomes: dict[str, str] = {}
    for end in opened.ends(closing):
        match end:
            case ev.ToolCallFinished(call_id=call_id, outcome=outcome):
                outcomes[call_id] = outcome
            case ev.StepCompleted(output=output) if going:
                step["ended_by"] = CLOSING_REPORT
                if step["status"] == "dispatched":  # it finished as the run was cancelled
                    step.update(status="done", output=output)
            case ev.StepErrored(status=status, error=error) if going:
                step.update(error=error, ended_by=CLOSING_REPORT)
                if step["status"] == "dispatched":  # one that waited stays so (its call named)
                    step["status"] = status
            case _:
                pass
    for call in calls:
        call["outcome"], call["ended_by"] = outcomes.get(str(call["call_id"])), CLOSING_REPORT
