"""What ``regiment show`` says of a step in brackets, and of a tool call it left unfinished."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TextIO

__all__ = ("mark", "print_unfinished")

_GOING = ("dispatched", "awaiting_approval")  # a step with no report (yet)
_OVER = ("completed", "partial", "failed", "cancelled")
"""A run's statuses once it has ended: a step it left without a report goes on no more
(a Ctrl-C can stop the team under the run before its steps report)."""


def mark(step: Mapping[str, object], shown: Mapping[str, object]) -> str:
    """What ``show`` says of a step in brackets."""
    if step["committed"]:
        return "committed"
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
