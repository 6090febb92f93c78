"""The events of a step: its dispatch, its outcome, its failed tool calls, its check."""

from __future__ import annotations

from regiment.hierarchy._messages import StepStatus
from regiment.hierarchy.events._base import NO_USAGE, Base
from regiment.models import Usage

__all__ = (
    "CheckFailed",
    "StepCompleted",
    "StepDispatched",
    "StepErrored",
    "ToolFailed",
)


class StepDispatched(Base, frozen=True, kw_only=True):
    """A step went to its worker."""

    plan_version: int
    step_id: str
    worker: str
    attempt: int


class StepCompleted(Base, frozen=True, kw_only=True):
    """A current-version step reported ``done`` and was committed.

    ``usage`` is what the step's model calls spent (a nested team's: its whole run),
    from its report, so it is there whether tracing is on or not.
    """

    plan_version: int
    step_id: str
    worker: str
    output: str
    usage: Usage = NO_USAGE


class StepErrored(Base, frozen=True, kw_only=True):
    """A current-version step reported something other than ``done`` (``usage``: as
    ``StepCompleted``'s)."""

    plan_version: int
    step_id: str
    worker: str
    status: StepStatus
    error: str
    usage: Usage = NO_USAGE


class ToolFailed(Base, frozen=True, kw_only=True):
    """A tool call of a step failed (the tool raised, timed out, or was refused).

    Emitted when the step's report arrives, before the step's own outcome
    (``StepCompleted``, ``StepErrored``, ...). ``message`` is what the model was told,
    e.g. ``"ZeroDivisionError: division by zero"``; ``error_type`` is
    ``ToolResult.error_type`` (the exception's class name, ``"timeout"``,
    ``"invalid_arguments"``, ...).
    """

    plan_version: int
    step_id: str
    worker: str
    tool: str
    call_id: str
    error_type: str
    message: str


class CheckFailed(Base, frozen=True, kw_only=True):
    """A step's check rejected its output; the step is kept as evidence (``usage``: as
    ``StepCompleted``'s)."""

    plan_version: int
    step_id: str
    check: str
    reason: str
    usage: Usage = NO_USAGE
