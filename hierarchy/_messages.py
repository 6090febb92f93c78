"""The message protocol between a run's planner and the workers.

Every message is a frozen msgspec struct with a tag, so it is cheap to build and
already serialisable for a transport between processes. Reply channels and
trace context travel in the actor envelope, never in these payloads.
"""

from __future__ import annotations

from typing import Literal, TypeAlias

import msgspec

from regiment._json import JsonValue
from regiment._text import shown
from regiment.hierarchy.guard._note import GuardNote
from regiment.hierarchy.plan._plan import PlanStep
from regiment.models import Usage

__all__ = (
    "AssignStep",
    "BudgetLimit",
    "PAUSING",
    "CancelStep",
    "StepAllowance",
    "StepContext",
    "StepReport",
    "StepStatus",
    "ToolOutcome",
    "WorkerMessage",
)

BudgetLimit: TypeAlias = Literal[
    "model_calls",
    "tool_calls",
    "tokens",
    "input_tokens",
    "output_tokens",
    "usd",
    "replans",
    "rounds",
    "wall_clock",
]
"""A :class:`~regiment.hierarchy.Budget` field that can run out."""

StepStatus: TypeAlias = Literal[
    "done", "failed", "timed_out", "cancelled", "iteration_limit", "budget_exhausted"
]


class StepAllowance(msgspec.Struct, frozen=True, kw_only=True):
    """What a step may spend; reserved by the planner before dispatch.

    ``None`` means unlimited. The worker stops the step (status
    ``budget_exhausted``) rather than go over.
    """

    model_calls: int | None = None
    tool_calls: int | None = None
    tokens: int | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    micro_usd: int | None = None  # millionths of a US dollar (``Budget.usd``)


class StepContext(msgspec.Struct, frozen=True, kw_only=True):
    """What a worker knows when it starts a step: the goal, the plan, and the
    committed outputs of the steps this one depends on (not the whole history)."""

    goal: str
    plan_outline: str
    dependency_outputs: tuple[tuple[str, str], ...] = ()
    notes: str = ""


class AssignStep(msgspec.Struct, frozen=True, kw_only=True, tag="assign_step"):
    """Planner -> worker: do this step of this plan version."""

    run_id: str
    plan_version: int
    step: PlanStep
    context: StepContext
    attempt: int = 1
    allowance: StepAllowance = StepAllowance()


PAUSING = "the run is pausing until its approvals are decided"
"""A ``CancelStep``'s reason when its run pauses: every step it cuts waits for a
decision on a tool call, so it was not called off (its span says ``awaiting_approval``)."""


class CancelStep(msgspec.Struct, frozen=True, kw_only=True, tag="cancel_step"):
    """Planner -> worker: stop this step (of this version) now.

    ``step_id=None`` cancels every step of the run.
    """

    run_id: str
    plan_version: int | None = None
    step_id: str | None = None
    reason: str = ""


class ToolOutcome(msgspec.Struct, frozen=True, kw_only=True):
    """One tool call a step made, at fact level."""

    tool: str
    call_id: str
    arguments: dict[str, JsonValue]
    content: JsonValue
    is_error: bool = False
    idempotency_key: str | None = None
    error_type: str | None = None  # as ToolResult.error_type: why the call failed
    raised: bool = False  # the tool body raised (ToolResult.raised)


class StepReport(msgspec.Struct, frozen=True, kw_only=True, tag="step_report"):
    """Worker -> planner: how a step ended. Committed only if ``plan_version`` is current.

    ``exhausted`` names the budget field whose share ran out (status
    ``budget_exhausted``); ``refused_tool_calls`` counts tool calls the model
    asked for that the step's share could not pay for (each came back to the
    model as an error result). ``error_type`` is, for a step that raised, the
    exception's type (``error.type`` on its span); ``None`` otherwise. ``fatal``: the
    step failed in a way no replan can fix (its model refused the call for good, see
    ``ModelAPIError.permanent``), so the run ends at once.
    """

    run_id: str
    plan_version: int
    step_id: str
    attempt: int
    worker: str
    status: StepStatus
    output: str = ""
    tool_outcomes: tuple[ToolOutcome, ...] = ()
    usage: Usage = Usage()
    model_calls: int = 0
    tool_calls: int = 0
    error: str | None = None
    exhausted: BudgetLimit | None = None
    refused_tool_calls: int = 0
    error_type: str | None = None
    guardrails: tuple[GuardNote, ...] = ()
    fatal: bool = False
    # Of ``usage``, what is an estimate: a nested run's calls cut in flight, charged at
    # their most (its ``RunResult.estimated_usage``); its run above adds it to its own.
    estimated: Usage = Usage()

    def tool_result(self, tool: str) -> JsonValue:
        """The content of the last successful call of ``tool`` in this step.

        Raises:
            KeyError: the step made no successful call of that tool.
        """
        for outcome in reversed(self.tool_outcomes):
            if outcome.tool == tool and not outcome.is_error:
                return outcome.content
        raise KeyError(f"step {self.step_id} made no successful call of tool {tool!r}")

    def __repr__(self) -> str:  # its output and tool outcomes may be long
        error = "" if self.error is None else f", error={shown(self.error)}"
        return (
            f"StepReport(step_id={self.step_id!r}, plan_version={self.plan_version}, "
            f"attempt={self.attempt}, worker={self.worker!r}, status={self.status!r}, "
            f"output={shown(self.output)}, tool_calls={self.tool_calls}{error})"
        )


WorkerMessage: TypeAlias = AssignStep | CancelStep
