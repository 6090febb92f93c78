"""Every state change of a run, as a closed union of small frozen types.

The planner actor decides; a decision that changes the run's state becomes one
of these values and goes through ``PlannerActor._record``, which applies it to
the run's book and emits the events it implies. That is the one place a run
journal records: replaying the same changes rebuilds the same book. They are
frozen msgspec structs: cheap to make on the per-step path, and already in the
shape a journal encodes (``RunAborted`` carries the exception object itself,
which a journal records by type and message).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeAlias, final

import msgspec

from regiment.errors import RunError
from regiment.hierarchy._critic import Verdict
from regiment.hierarchy._memory import WorkingMemory
from regiment.hierarchy._messages import AssignStep, BudgetLimit, StepReport
from regiment.hierarchy._result import RunStatus
from regiment.hierarchy.guard._note import GuardNote
from regiment.hierarchy.plan._plan import Plan, PlanStep
from regiment.hierarchy.run._messages import Purpose
from regiment.hierarchy.run._phase import PlanKind
from regiment.models import ModelResponse, Usage
from regiment.tools import ApprovalDecision, ApprovalRequest

if TYPE_CHECKING:
    from regiment.hierarchy.run._reask import Unpaid

__all__ = (
    "ApprovalAnswered",
    "ApprovalJudged",
    "ApprovalAsked",
    "BudgetRanOut",
    "CheckRejected",
    "CritiqueJudged",
    "GuardsNoted",
    "MemoryAdopted",
    "ModelCharged",
    "PlanAdopted",
    "ReplanBegun",
    "ReportArrived",
    "ReportDropped",
    "RoundBegun",
    "RunAborted",
    "RunBegan",
    "RunChange",
    "RunFinished",
    "StepCommitted",
    "StepEnded",
    "StepSent",
    "SynthesisBegun",
    "ToolCallsRefused",
)


@final
class GuardsNoted(msgspec.Struct, frozen=True):
    """Guardrails on the planner side tripped or rewrote (each note is an event)."""

    notes: tuple[GuardNote, ...]


@final
class RunBegan(msgspec.Struct, frozen=True):
    """The run was accepted."""


@final
class PlanAdopted(msgspec.Struct, frozen=True):
    """A plan version became current: the first plan, a replan's, or a new round's."""

    plan: Plan
    kind: PlanKind
    replaced: Plan | None  # the version it replaces (None for the first plan)
    added: tuple[PlanStep, ...]  # the steps the planner gave for it


@final
class StepSent(msgspec.Struct, frozen=True):
    """A step went to ``worker`` with its reserved share of the budget (``span``: the id
    its span takes, when a journaled run is traced: ``telemetry.step_span_headers``)."""

    assign: AssignStep
    worker: str
    span: str | None = None


@final
class ReportArrived(msgspec.Struct, frozen=True):
    """A dispatched step reported: it is no longer in flight, and what it spent is charged."""

    report: StepReport
    quiet: bool = False  # came as a run ended that no reader follows: no event of its calls


@final
class ReportDropped(msgspec.Struct, frozen=True):
    """A report of an older plan version was dropped, never applied."""

    report: StepReport
    current_version: int


@final
class StepEnded(msgspec.Struct, frozen=True):
    """A current-version step reported something other than ``done``."""

    report: StepReport
    detail: str  # what went wrong, for the replan or the budget's message
    quiet: bool = False  # cancelled as a run ended that no reader follows: no event


@final
class ToolCallsRefused(msgspec.Struct, frozen=True):
    """A step's tool calls were refused for want of its tool-call share.

    ``ends_run``: the run's own tool calls are all spent too, so the run ends (the
    report is then judged as one that came as the run ends: a ``done`` step is
    committed); otherwise the run goes on with a note.
    """

    report: StepReport
    ends_run: bool


@final
class CheckRejected(msgspec.Struct, frozen=True):
    """A step's check rejected its output; the report is kept as evidence."""

    report: StepReport
    check: str
    reason: str  # the check's own reason
    detail: str  # why the version is replaced, for the replan


@final
class StepCommitted(msgspec.Struct, frozen=True):
    """A current-version step reported ``done`` and passed its check."""

    report: StepReport
    artifact: bool  # its output is kept verbatim in the answer
    quiet: bool = False  # done as a run ended that no reader follows: no event


@final
class ReplanBegun(msgspec.Struct, frozen=True):
    """The current version will be replaced (one replan of the budget is used)."""

    reason: str


@final
class ModelCharged(msgspec.Struct, frozen=True):
    """A planner-side model call answered; its usage is charged to its role."""

    purpose: Purpose
    usage: Usage
    response: ModelResponse | None = None  # what a journal replays on resume
    calls: int = 1  # model calls it took (a structured answer may be asked again)
    unpaid: Unpaid | None = None  # a synthesis the budget could not ask again (journaled)


@final
class CritiqueJudged(msgspec.Struct, frozen=True):
    """The critic judged a round."""

    verdict: Verdict


@final
class RoundBegun(msgspec.Struct, frozen=True):
    """The critic found the goal unmet and rounds remain: round ``round`` is planned."""

    round: int
    feedback: str


@final
class MemoryAdopted(msgspec.Struct, frozen=True):
    """The carried context was compressed into ``memory``."""

    memory: WorkingMemory
    before_tokens: int


@final
class SynthesisBegun(msgspec.Struct, frozen=True):
    """The final answer is being written."""


@final
class BudgetRanOut(msgspec.Struct, frozen=True):
    """A budget limit was reached; ``drain``: a step's own share ran out (its siblings in
    flight finish, and may still draw on what it gave back)."""

    limit: BudgetLimit
    detail: str
    drain: bool = False


@final
class ApprovalAsked(msgspec.Struct, frozen=True):
    """A tool call of this run (or of a team nested in it) waits for a decision.

    ``journaled``: a resumed run's request, already in the journal.
    """

    request: ApprovalRequest
    journaled: bool = False


@final
class ApprovalAnswered(msgspec.Struct, frozen=True):
    """A pending request was decided (``by`` is ``timeout`` when it expired).

    ``journaled``: decided while the run was paused, so the journal has it already.
    """

    request: ApprovalRequest
    decision: ApprovalDecision
    by: str
    waited_s: float
    journaled: bool = False
    judging: bool = False  # an edit the call's guards judge next: ``ApprovalJudged`` follows


@final
class ApprovalJudged(msgspec.Struct, frozen=True):
    """The call's ``tool_call`` guards judged the edit of request ``request_id``: the
    edit as they left it, or the denial they made of it."""

    request_id: str
    verdict: ApprovalDecision


@final
class RunFinished(msgspec.Struct, frozen=True):
    """The run ended with a result (completed, partial or cancelled)."""

    answer: str
    status: RunStatus


@final
class RunAborted(msgspec.Struct, frozen=True):
    """The run ended without a result."""

    error: RunError


RunChange: TypeAlias = (
    RunBegan
    | PlanAdopted
    | StepSent
    | ReportArrived
    | ReportDropped
    | StepEnded
    | ToolCallsRefused
    | CheckRejected
    | StepCommitted
    | ReplanBegun
    | ModelCharged
    | CritiqueJudged
    | RoundBegun
    | MemoryAdopted
    | SynthesisBegun
    | BudgetRanOut
    | ApprovalAsked
    | ApprovalAnswered
    | ApprovalJudged
    | RunFinished
    | RunAborted
    | GuardsNoted
)
