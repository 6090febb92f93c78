"""A worker's reply that has neither text nor a tool call: asked again once, then the
step fails. Committed as it was, the step's output would be ``''``."""

from __future__ import annotations

import logging

from regiment.hierarchy._messages import AssignStep, StepReport
from regiment.hierarchy.workers._progress import StepProgress
from regiment.models import Message, TextPart

__all__ = ("ask_again", "empty_twice")

_log = logging.getLogger("regiment.worker")

_EMPTY_NOTE = (
    "(Your reply was empty: no text and no tool call. Answer the step: call a tool, "
    "or reply with your result as text.)"
)


def ask_again(messages: list[Message], assign: AssignStep, worker: str) -> bool:
    """After an empty reply (no text, no tool call), the step's last message again with a
    note saying so: an empty reply would be committed as the step's output. The reply is
    not added to the conversation (an empty assistant turn is refused by Claude's API)."""
    last = messages[-1]
    messages[-1] = Message(role=last.role, parts=(*last.parts, TextPart(text=_EMPTY_NOTE)))
    _log.info(
        "%s %s: the model's reply was empty (no text, no tool call); asking again once",
        worker,
        assign.step.id,
        extra={"run_id": assign.run_id, "step_id": assign.step.id, "worker": worker},
    )
    return True


def empty_twice(progress: StepProgress, assign: AssignStep, worker: str) -> StepReport:
    """The report of a step whose model answered with nothing, and again when asked once
    more: ``failed`` (a replan may word it better). A step whose answer has text is
    ``done``: its loop reports that itself (no call here, #22)."""
    error = (
        f"the model of worker '{worker}' gave an empty reply (no text, no tool call), and again "
        "when asked once more; check the worker's model and instructions (a reply cut at "
        "max_tokens while it was thinking is empty too)"
    )
    return progress.report(assign, worker, "failed", error=error)
