"""What ``regiment show`` says of a step in brackets: committed, or why its report was
not (its check rejected it, a replan dropped it as stale), or that it has none yet; and of
a tool call it left unfinished."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TextIO

from regiment.journal import EventRecorded, Record

__all__ = ("judgements", "print_unfinished", "step_mark")

_GOING = ("dispatched", "awaiting_approval")  # a step with no report (yet)
_OVER = ("completed", "partial", "failed", "cancelled")
"""A run's statuses once it has ended: a step it left without a report goes on no more
(a Ctrl-C can stop the team under the run before its steps report)."""


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
    if step["status"] == "awaiting_approval":  # `approve` refuses one of a run that ended
        return (
            "undecided when the run ended"
            if shown["status"] in _OVER
            else "waits for a decision on"
        )
    if step["status"] != "dispatched":
        return str(step["status"])
    if shown["paused"] and shown["status"] in ("paused", "stalled"):
        return "dispatched, waits for a resume"  # its requests decided: a resume runs it
    return "dispatched, no report"


def print_unfinished(
    call: Mapping[str, object],
    step: Mapping[str, object],
    shown: Mapping[str, object],
    *,
    stdout: TextIO,
) -> None:
    """A tool call of ``step`` started and never finished: its body may have acted before
    the cut (a cut it was when its step ended, or its run did; else it is in flight, or
    was when the run stopped, and a resume runs it again)."""
    ended = step["status"] not in _GOING or shown["status"] in _OVER
    arguments = json.dumps(call["arguments"], sort_keys=True)
    how = (
        "cut short: started, never finished; what it did before the cut is not recorded"
        if ended
        else "started, no result yet (in flight when the run stopped, or still running)"
    )
    print(f"    call {call['tool']}({arguments}) [{how}]", file=stdout)
