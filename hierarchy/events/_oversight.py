"""The events of what oversees a run: its budget, its guardrails, its approvals."""

from __future__ import annotations

from regiment._json import JsonObject
from regiment.hierarchy._messages import BudgetLimit, StepAllowance
from regiment.hierarchy.events._base import Base
from regiment.tools import ApprovalRequest

__all__ = (
    "ApprovalRequested",
    "ApprovalResolved",
    "BudgetExhausted",
    "BudgetToppedUp",
    "GuardrailRewrote",
    "GuardrailTripped",
)


class BudgetExhausted(Base, frozen=True, kw_only=True):
    """A budget limit was reached.

    With ``step_id`` set, only that step's share ran out (a tool call was refused
    and the model was told); the run goes on. Without it, the run ends.
    """

    limit: BudgetLimit
    detail: str
    step_id: str | None = None


class BudgetToppedUp(Base, frozen=True, kw_only=True):
    """A step in flight whose share could not pay for its next call drew more from
    what its run had left (``granted``: the amounts added; ``allowance``: its share now)."""

    plan_version: int
    step_id: str
    granted: StepAllowance
    allowance: StepAllowance
    detail: str


class GuardrailTripped(Base, frozen=True, kw_only=True):
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


class GuardrailRewrote(Base, frozen=True, kw_only=True):
    """A guardrail rewrote a subject (for example, redacted an e-mail address)."""

    guardrail: str
    subject: str
    role: str = ""
    worker: str | None = None
    step_id: str | None = None


class ApprovalRequested(Base, frozen=True, kw_only=True):
    """A tool call waits for a decision (``RunningTeam.approve(request.request_id, ...)``).

    ``request.worker`` is the worker's path, through nested teams; ``request.step_id``
    the step of this run it belongs to.
    """

    request: ApprovalRequest


class ApprovalResolved(Base, frozen=True, kw_only=True):
    """A pending request was decided, or expired (``decided_by`` is then ``timeout``).

    An edit that the call's ``tool_call`` guardrails judge before the tool runs is
    resolved once they have judged it, and says what they made of it: ``arguments``
    stay the person's edit, ``guarded`` and ``ran_arguments`` say what ran (their
    ``GuardrailRewrote`` or ``GuardrailTripped`` come with the step's other events).

    Attributes:
        decision: ``approve``, ``deny`` or ``edit``.
        reason: the denial's (or the edit's) reason.
        arguments: the arguments the tool runs with (``edit``: the edited ones, as
            decided), else the requested ones.
        waited_s: seconds the call waited for the decision in this process.
        guarded: what the call's guards made of an edit: ``""`` (none judged it, or
            they let it through as it was: it ran with ``arguments``), ``"rewritten"``
            (it ran with ``ran_arguments``), ``"refused"`` (it did not run: the call
            was denied, ``guard_reason`` says why; a ``fail_step`` guard's refusal
            fails the step too) or ``"unjudged"`` (its run ended, or paused, before
            they judged it: a resume judges it again).
        ran_arguments: the arguments the tool ran with, when a guard rewrote the edit.
        guard_reason: why the guards refused the edit (``guarded == "refused"``).
    """

    request_id: str
    tool: str
    worker: str
    step_id: str
    decision: str
    decided_by: str = ""
    reason: str = ""
    arguments: JsonObject = {}  # noqa: RUF012 (a msgspec default: each instance gets its own copy)
    waited_s: float = 0.0
    guarded: str = ""
    ran_arguments: JsonObject | None = None
    guard_reason: str = ""
