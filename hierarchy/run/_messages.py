"""Messages a run's planner actor receives: the worker reports, plus its own."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal, TypeAlias

import msgspec
from opentelemetry.trace import Span

from regiment.hierarchy._approvals import (
    ApprovalNoticed,
    ApprovalSettled,
    EditJudged,
    NestedStalled,
)
from regiment.hierarchy._messages import StepReport
from regiment.models import ModelResponse

if TYPE_CHECKING:
    from regiment.hierarchy.guard._chain import Checked
    from regiment.hierarchy.guard._types import AnswerSubject, PlanSubject
    from regiment.hierarchy.run._changes import PlanAdopted
    from regiment.hierarchy.run._reask import Unpaid

__all__ = (
    "CancelRun",
    "DeadlineReached",
    "GaveBack",
    "GuardJudged",
    "ModelReplied",
    "PlannerMessage",
    "StartRun",
)

Purpose: TypeAlias = Literal["plan", "replan", "round", "critique", "compress", "synthesis"]


class StartRun(msgspec.Struct, frozen=True):
    """Begin the run (sent once, by the team)."""


class ModelReplied(msgspec.Struct, frozen=True):
    """A planner-side model call finished (sent by the run actor's own task).

    These never leave the process, so they may carry the exception object, and
    the call's phase span, still open while the reply is handled (see ``PhaseCalls``).
    """

    purpose: Purpose
    token: int
    response: ModelResponse | None
    error: Exception | None = None
    calls: int = 1  # model calls made for it (a structured answer's re-asks count)
    span: Span | None = None
    # A synthesis whose reply was empty (or not valid) and that the budget could not
    # ask again: the run ends on that limit (``Reasks``), the reply not its answer.
    unpaid: Unpaid | None = None


class CancelRun(msgspec.Struct, frozen=True):
    """The caller went away: stop the run's work now (``PAUSING``: a nested run whose
    parent pauses pauses too)."""

    reason: str = "cancelled by the caller"


class DeadlineReached(msgspec.Struct, frozen=True):
    """The run's wall-clock budget ran out."""


class GuardJudged(msgspec.Struct, frozen=True):
    """The plan or answer guards gave their verdict (sent by the run actor's own task);
    ``adopted`` is the plan that was judged (``None`` for the answer)."""

    token: int
    checked: Checked[PlanSubject | AnswerSubject]
    adopted: PlanAdopted | None


class GaveBack(msgspec.Struct, frozen=True):
    """A nested run's check waited for a give-back in the tree of runs (a critique's,
    a compression's, a dispatch's: ``JudgesRounds._waits_above``): look again."""


PlannerMessage: TypeAlias = (
    StartRun
    | ModelReplied
    | StepReport
    | CancelRun
    | DeadlineReached
    | GuardJudged
    | ApprovalNoticed
    | ApprovalSettled
    | EditJudged
    | NestedStalled
    | GaveBack
)
