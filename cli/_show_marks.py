"""What ``regiment show`` says of a step in brackets: committed, or why its report was
not (its check rejected it, a replan dropped it as stale), or that it has none yet."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from regiment.journal import EventRecorded, Record

__all__ = ("judgements", "step_mark")


def judgements(records: Sequence[Record]) -> dict[tuple[object, object], str]:
    """Why each report the run did not commit though it said ``done`` was not, by (plan
    version, step id), from the run's journaled events."""
    judged: dict[tuple[object, object], str] = {}
    for record in records:
        match record:
            case EventRecorded(event={"type": "CheckFailed", "check": check, "reason": why}):
                key = (record.event.get("plan_version"), record.event.get("step_id"))
                judged[key] = f"rejected by its check '{check}': {why}"
            case EventRecorded(
                event={"type": "StaleReportDropped", "report_version": old, "step_id": step_id}
            ):
                current, status = record.event.get("current_version"), record.event.get("status")
                why = f"replaced by v{current}" if current != old else "being replaced"
                done = "" if status == "done" else f"{status}, "
                judged[(old, step_id)] = f"{done}dropped: plan v{old} was {why}"
            case _:
                pass
    return judged


def step_mark(step: Mapping[str, object], shown: Mapping[str, object]) -> str:
    """What ``show`` says of a step in brackets."""
    if step["committed"]:
        return "committed"
    if step.get("judged"):
        return str(step["judged"])
    if step["status"] == "awaiting_approval":
        return "waits for a decision on"
    if step["status"] != "dispatched":
        return str(step["status"])
    if shown["paused"] and shown["status"] in ("paused", "stalled"):
        return "dispatched, waits for a resume"  # its requests decided: a resume runs it
    return "dispatched, no report"
