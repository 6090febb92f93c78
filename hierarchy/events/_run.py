"""The events of a run as a whole: its start, its plan versions and replans, the critic's
rounds, compression, synthesis, and its end."""

from __future__ import annotations

from typing import TYPE_CHECKING

from regiment.hierarchy._critic import Verdict
from regiment.hierarchy._messages import BudgetLimit, StepReport, StepStatus, ToolOutcome
from regiment.hierarchy.events._base import Base
from regiment.hierarchy.plan._plan import Plan, PlanStep
from regiment.models import Usage

if TYPE_CHECKING:
    from regiment.hierarchy._result import RunResult

__all__ = (
    "ContextCompressed",
    "CritiqueCompleted",
    "PlanCreated",
    "Replanned",
    "RoundStarted",
    "RunCompleted",
    "RunFailed",
    "RunStarted",
    "StaleReportDropped",
    "SynthesisStarted",
)


class RunStarted(Base, frozen=True, kw_only=True):
    """The run was accepted."""

    goal: str
    team: str


class PlanCreated(Base, frozen=True, kw_only=True):
    """A plan version became current (version 1, or after a replan)."""

    plan: Plan


class Replanned(Base, frozen=True, kw_only=True):
    """The unfinished tail was replaced (a rejected step: ``kept``, or ``added`` if run again)."""

    old_version: int
    new_version: int
    reason: str
    kept: tuple[str, ...]
    removed: tuple[PlanStep, ...]
    added: tuple[PlanStep, ...]


class StaleReportDropped(Base, frozen=True, kw_only=True):
    """A report for a replaced plan version arrived and was not applied.

    ``current_version`` is the newest announced plan version when the report
    arrived. While a replan is still being planned that is the version being
    replaced, so it may equal ``report_version``: the next version does not
    exist until its ``Replanned``/``PlanCreated``, and may never exist.

    ``tool_outcomes`` are the dropped report's: none is applied, but each tool call in
    it ran, or (``error_type`` ``"cut"``) started and was cut before it finished, so it
    may have acted.
    """

    report_version: int
    current_version: int
    step_id: str
    status: StepStatus
    tool_outcomes: tuple[ToolOutcome, ...] = ()


class CritiqueCompleted(Base, frozen=True, kw_only=True):
    """The critic judged a round."""

    verdict: Verdict


class RoundStarted(Base, frozen=True, kw_only=True):
    """The critic found the goal unmet and rounds remain: another round is planned."""

    round: int
    feedback: str


class ContextCompressed(Base, frozen=True, kw_only=True):
    """The carried context passed its threshold and was compressed into working memory."""

    before_tokens: int
    after_tokens: int
    kept_step_ids: tuple[str, ...]


class SynthesisStarted(Base, frozen=True, kw_only=True):
    """The final answer is being written."""

    committed_steps: tuple[str, ...]


class RunCompleted(Base, frozen=True, kw_only=True):
    """The run ended with a result (possibly partial, or paused for approvals).

    Always the last event of a finished or paused run."""

    result: RunResult


class RunFailed(Base, frozen=True, kw_only=True):
    """The run ended without a result. Always the last event of a failed run.

    Besides why (``error_type``, ``message``), it carries what the run got to, as
    ``RunResult`` names it: every plan version, every step report (the one that
    failed, and its siblings cancelled as the run wound down), the committed step
    ids (and those its checks rejected), usage (``estimated_usage``: the part of it charged as an estimate, as
    ``RunResult`` says), model and tool calls, the budget limit that ran out, and the trace
    id. A ``RunFailed`` made outside a run (a cancelled stream, a service's own
    failure) leaves them empty.
    """

    error_type: str
    message: str
    plans: tuple[Plan, ...] = ()
    steps: tuple[StepReport, ...] = ()
    committed: tuple[str, ...] = ()
    rejected: tuple[str, ...] = ()
    usage: Usage = Usage()
    model_calls: int = 0
    tool_calls: int = 0
    budget_exhausted: BudgetLimit | None = None
    trace_id: str | None = None
    estimated_usage: Usage = Usage()  # the part of usage that is an estimate (cut calls)
