"""What a team's approval desk tells a run's planner (``Notice``), and where a step
waits (``StepAt``): the messages of ``regiment.hierarchy._approvals``."""

from __future__ import annotations

from typing import NamedTuple, final

import msgspec

from regiment.tools import ApprovalDecision, ApprovalRequest

__all__ = (
    "ApprovalNoticed",
    "ApprovalSettled",
    "DeskNotice",
    "EditJudged",
    "NestedStalled",
    "Notice",
    "StepAt",
)


class DeskNotice(msgspec.Struct, frozen=True):
    """What the approval desk tells a run's planner: one of ``Notice``."""


@final
class ApprovalNoticed(DeskNotice, frozen=True):
    """A planner message: a call of this run waits for a decision."""

    request: ApprovalRequest
    journaled: bool = False  # a resumed run's request, journaled before it paused


@final
class ApprovalSettled(DeskNotice, frozen=True):
    """A planner message: a pending request of this run was decided (or expired)."""

    request: ApprovalRequest
    decision: ApprovalDecision
    by: str
    waited_s: float
    journaled: bool = False  # decided while the run was paused: the journal has it
    judging: bool = False  # an edit the call's guards judge next (``EditJudged`` follows)
    # Not ``None``: the request expired before the run was told of it (so its
    # ``ApprovalRequested`` comes first); ``True``: a resumed run's, journaled before.
    unasked: bool | None = None


@final
class EditJudged(DeskNotice, frozen=True):
    """A planner message: the call's ``tool_call`` guards judged a request's edit
    (``verdict``: the edit as they left it, or the denial they made of it)."""

    request_id: str
    verdict: ApprovalDecision


@final
class NestedStalled(DeskNotice, frozen=True):
    """A planner message: a run nested in this one has nothing left to do but wait for
    decisions, so the step it serves waits too; or (``run_id`` this run's own) a step
    of this run whose decided call worked now only waits: the run may have to pause."""

    run_id: str


Notice = ApprovalNoticed | ApprovalSettled | EditJudged | NestedStalled


class StepAt(NamedTuple):
    """A step of a run: where a nested run hangs in its parent."""

    run_id: str
    plan_version: int
    step_id: str
