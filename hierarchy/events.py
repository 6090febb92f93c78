"""The typed events a run emits, as a closed union.

``RunningTeam.stream(goal)`` yields them as they happen, and ``RunResult.events``
holds the same sequence, so the stream and the result tell the same story.

Three events are live progress rather than run state: ``TextDelta`` (a piece of a model's reply
as it streams), ``ToolCallStarted`` and ``ToolCallFinished``. Only ``stream(goal)`` carries
them (``run(goal)`` streams nothing), and they are neither in ``RunResult.events`` nor
journaled: they are many, and what they tell is already recorded (the replies, the tool
outcomes in each step's report). A consumer that only wants the answer as it is written keeps
the ``TextDelta`` s whose ``role`` is ``"synthesizer"``.

The event types are listed once, in ``__all__`` here: ``regiment.hierarchy`` re-exports them
from it, and code that handles every event matches on ``events.<Type>`` (``from
regiment.hierarchy import events``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeAlias

import msgspec

from regiment._json import JsonObject, JsonValue
from regiment.hierarchy._critic import Verdict
from regiment.hierarchy._messages import (
    BudgetLimit,
    StepAllowance,
    StepReport,
    StepStatus,
    ToolOutcome,
)
from regiment.hierarchy.plan._plan import Plan, PlanStep
from regiment.models import Role, Usage
from regiment.tools import ApprovalRequest

if TYPE_CHECKING:
    from regiment.hierarchy._result import RunResult

__all__ = (
    "ApprovalRequested",
    "ApprovalResolved",
    "BudgetExhausted",
    "BudgetToppedUp",
    "CheckFailed",
    "ContextCompressed",
    "CritiqueCompleted",
    "Event",
    "GuardrailRewrote",
    "GuardrailTripped",
    "PlanCreated",
    "Replanned",
    "RunCompleted",
    "RunFailed",
    "RoundStarted",
    "RunStarted",
    "StaleReportDropped",
    "StepCompleted",
    "StepDispatched",
    "StepErrored",
    "SynthesisStarted",
    "TextDelta",
    "ToolCallFinished",
    "ToolCallStarted",
    "ToolFailed",
)

_NO_USAGE = Usage()  # events journaled before steps' events carried their usage


class _Base(msgspec.Struct, frozen=True, kw_only=True, tag=True):
    run_id: str


class RunStarted(_Base, frozen=True, kw_only=True):
    """The run was accepted."""

    goal: str
    team: str


class PlanCreated(_Base, frozen=True, kw_only=True):
    """A plan version became current (version 1, or after a replan)."""

    plan: Plan


class StepDispatched(_Base, frozen=True, kw_only=True):
    """A step went to its worker."""

    plan_version: int
    step_id: str
    worker: str
    attempt: int


class StepCompleted(_Base, frozen=True, kw_only=True):
    """A current-version step reported ``done`` and was committed.

    ``usage`` is what the step's model calls spent (a nested team's: its whole run),
    from its report, so it is there whether tracing is on or not.
    """

    plan_version: int
    step_id: str
    worker: str
    output: str
    usage: Usage = _NO_USAGE


class StepErrored(_Base, frozen=True, kw_only=True):
    """A current-version step reported something other than ``done`` (``usage``: as
    ``StepCompleted``'s)."""

    plan_version: int
    step_id: str
    worker: str
    status: StepStatus
    error: str
    usage: Usage = _NO_USAGE


class ToolFailed(_Base, frozen=True, kw_only=True):
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


class TextDelta(_Base, frozen=True, kw_only=True):
    """More text of a model's reply, as it streams (a live event; see the module docstring).

    A call's deltas, joined, are its reply's text; ``call`` names the call (the same on
    each of its deltas, another for each other call of the run: key a call's text on it,
    as two calls of one role may stream at once). ``worker`` and ``step_id``: for
    ``role="worker"``. Once a refusal has streamed, one more delta has ``refused=True``:
    drop the call's text (it fails with ``ModelRefused``). A call whose stream broke and
    is made again sends ``text=""``, ``void=N``: drop the last N characters it streamed.
    """

    role: Role
    text: str
    worker: str | None = None
    step_id: str | None = None
    refused: bool = False
    void: int = 0
    call: str = ""


class ToolCallStarted(_Base, frozen=True, kw_only=True):
    """A worker began a tool call (a live event; see the module docstring)."""

    worker: str
    step_id: str
    tool: str
    call_id: str
    arguments: dict[str, JsonValue]


class ToolCallFinished(_Base, frozen=True, kw_only=True):
    """A worker's tool call ended (a live event; see the module docstring).

    ``outcome`` is ``"ok"``, or why it failed as ``ToolResult.error_type`` says
    (the exception's class name, ``"timeout"``, ``"invalid_arguments"``, ...);
    ``"cut"`` for a call whose step was cut (a cancel, a replan, a pause, its timeout)
    while its body ran: it may have acted, and its step's report lists it with
    ``error_type`` ``"cut"``; ``"awaiting_approval"`` for one that was still waiting
    for a decision (the body has not run); ``"guardrail"`` for one a guard refused
    (``"GuardrailError"`` if that fails the step). A call held back before it started (its
    plan was over) has no ``ToolCallStarted``/``ToolCallFinished``. ``duration``: seconds,
    less ``approval_wait``: those it waited for a person's (an approver's) decisions.
    """

    worker: str
    step_id: str
    tool: str
    call_id: str
    arguments: dict[str, JsonValue]
    duration: float
    outcome: str
    approval_wait: float = 0.0


class CheckFailed(_Base, frozen=True, kw_only=True):
    """A step's check rejected its output; the step is kept as evidence (``usage``: as
    ``StepCompleted``'s)."""

    plan_version: int
    step_id: str
    check: str
    reason: str
    usage: Usage = _NO_USAGE


class Replanned(_Base, frozen=True, kw_only=True):
    """The unfinished tail was replaced (a rejected step: ``kept``, or ``added`` if run again)."""

    old_version: int
    new_version: int
    reason: str
    kept: tuple[str, ...]
    removed: tuple[PlanStep, ...]
    added: tuple[PlanStep, ...]


class StaleReportDropped(_Base, frozen=True, kw_only=True):
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


class CritiqueCompleted(_Base, frozen=True, kw_only=True):
    """The critic judged a round."""

    verdict: Verdict


class RoundStarted(_Base, frozen=True, kw_only=True):
    """The critic found the goal unmet and rounds remain: another round is planned."""

    round: int
    feedback: str


class ContextCompressed(_Base, frozen=True, kw_only=True):
    """The carried context passed its threshold and was compressed into working memory."""

    before_tokens: int
    after_tokens: int
    kept_step_ids: tuple[str, ...]


class SynthesisStarted(_Base, frozen=True, kw_only=True):
    """The final answer is being written."""

    committed_steps: tuple[str, ...]


class BudgetExhausted(_Base, frozen=True, kw_only=True):
    """A budget limit was reached.

    With ``step_id`` set, only that step's share ran out (a tool call was refused
    and the model was told); the run goes on. Without it, the run ends.
    """

    limit: BudgetLimit
    detail: str
    step_id: str | None = None


class BudgetToppedUp(_Base, frozen=True, kw_only=True):
    """A step in flight whose share could not pay for its next call drew more from
    what its run had left (``granted``: the amounts added; ``allowance``: its share now)."""

    plan_version: int
    step_id: str
    granted: StepAllowance
    allowance: StepAllowance
    detail: str


class GuardrailTripped(_Base, frozen=True, kw_only=True):
    """A guardrail stopped a subject: ``subject`` says what (``model_request``,
    ``model_reply``, ``plan``, ``tool_call``, ``tool_result``, ``answer``);
    ``worker``/``step_id`` are set for a step's guards, ``role`` for the planner
    side's (``planner``, ``critic``, ``synthesizer``)."""

    guardrail: str
    subject: str
    reason: str
    role: str = ""
    worker: str | None = None
    step_id: str | None = None


class GuardrailRewrote(_Base, frozen=True, kw_only=True):
    """A guardrail rewrote a subject (for example, redacted an e-mail address)."""

    guardrail: str
    subject: str
    role: str = ""
    worker: str | None = None
    step_id: str | None = None


class ApprovalRequested(_Base, frozen=True, kw_only=True):
    """A tool call waits for a decision (``RunningTeam.approve(request.request_id, ...)``).

    ``request.worker`` is the worker's path, through nested teams; ``request.step_id``
    the step of this run it belongs to.
    """

    request: ApprovalRequest


class ApprovalResolved(_Base, frozen=True, kw_only=True):
    """A pending request was decided, or expired (``decided_by`` is then ``timeout``).

    Attributes:
        decision: ``approve``, ``deny`` or ``edit``.
        reason: the denial's (or the edit's) reason.
        arguments: the arguments the tool runs with (``edit``), else the requested ones.
        waited_s: seconds the call waited for the decision in this process.
    """

    request_id: str
    tool: str
    worker: str
    step_id: str
    decision: str
    decided_by: str = ""
    reason: str = ""
    arguments: JsonObject = {}
    waited_s: float = 0.0


class RunCompleted(_Base, frozen=True, kw_only=True):
    """The run ended with a result (possibly partial, or paused for approvals).

    Always the last event of a finished or paused run."""

    result: RunResult


class RunFailed(_Base, frozen=True, kw_only=True):
    """The run ended without a result. Always the last event of a failed run.

    Besides why (``error_type``, ``message``), it carries what the run got to, as
    ``RunResult`` names it: every plan version, every step report (the one that
    failed, and its siblings cancelled as the run wound down), the committed step
    ids (and those its checks rejected), usage, model and tool calls, the budget limit that ran out, and the trace
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


Event: TypeAlias = (
    RunStarted
    | PlanCreated
    | StepDispatched
    | StepCompleted
    | StepErrored
    | ToolFailed
    | TextDelta
    | ToolCallStarted
    | ToolCallFinished
    | CheckFailed
    | Replanned
    | StaleReportDropped
    | CritiqueCompleted
    | RoundStarted
    | ContextCompressed
    | SynthesisStarted
    | BudgetExhausted
    | BudgetToppedUp
    | GuardrailTripped
    | GuardrailRewrote
    | ApprovalRequested
    | ApprovalResolved
    | RunCompleted
    | RunFailed
)
