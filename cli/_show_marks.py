"""What ``regiment show`` says of a step in brackets: committed, or why its report was
not (its check rejected it, a replan dropped it as stale), or that it has none yet; and of
a tool call it left unfinished."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TextIO

from regiment.cli._show_ends import CLOSING_REPORT, OVER
from regiment.journal import EventRecorded, Record

__all__ = ("judgements", "print_unfinished", "step_mark")

_GOING = ("dispatched", "awaiting_approval")  # a step with no report (yet)
_FROM_CLOSING = "from the run's closing report"


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
            "undecided when the run ended" if shown["status"] in OVER else "waits for a decision on"
        )
    if step["ended_by"] == CLOSING_REPORT:  # it had no report: the run's end ended it
        return f"{step['status']}, {_FROM_CLOSING}"
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
    ended = step["status"] not in _GOING or shown["status"] in OVER
    arguments = json.dumps(call["arguments"], sort_keys=True)
    how = (
        "cut short: started, never finished; what it did before the cut is not recorded"
        if ended
        else "started, no result yet (in flight when the run stopped, or still running)"
    )
    outcome = call["outcome"]
    if call["ended_by"] == CLOSING_REPORT and outcome != "cut":  # (a timeout's, say)
        how = f"started, its result not journaled; ended {outcome!r}, {_FROM_CLOSING}"
    elif call["ended_by"] == CLOSING_REPORT:
        how = f"{how}; ended 'cut', {_FROM_CLOSING}"
    print(f"    call {call['tool']}({arguments}) [{how}]", file=stdout)
