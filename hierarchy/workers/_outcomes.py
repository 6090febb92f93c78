"""What a reply's tool calls come to in the step's report: :func:`collect` for calls
that ended, :func:`cut_short` for those a cut (a replan, a cancel, a pause, the
step's timeout) stopped while their bodies ran.

A call whose body started and never finished may have acted before the cut (charged
a card, sent a mail): its report lists it as a failed outcome with ``error_type``
``"cut"``, so a program reading the result can tell. A call that never started (held
back by the fence, waiting for a guard or an approval, or not reached) is not listed.
"""

from __future__ import annotations

from regiment._text import clipped
from regiment.hierarchy._messages import ToolOutcome
from regiment.hierarchy.workers._not_run import not_run
from regiment.hierarchy.workers._progress import StepProgress
from regiment.models import ToolCallPart, ToolResultPart
from regiment.telemetry import Telemetry
from regiment.tools import (
    ApprovalDecision,
    ApprovalRequest,
    Approver,
    Deny,
    ToolResult,
    Toolset,
    ask_approver,
)

__all__ = ("CUT", "collect", "cut_short", "logged", "over_share", "refused", "while_deciding")

CUT = "cut"
"""``ToolOutcome.error_type`` of a call whose body started and was cut before it finished."""

_CUT_TEXT = (
    "started, cut before it finished: what it did is not known (tool '{}' may have acted; "
    "check before running it again, with its idempotency key if it has one)"
)


def _outcome(call: ToolCallPart, result: ToolResult) -> ToolOutcome:
    return ToolOutcome(
        tool=call.name,
        call_id=call.id,
        arguments=dict(result.arguments),
        content=result.content,
        is_error=result.is_error,
        idempotency_key=result.idempotency_key,
        error_type=result.error_type,
        raised=result.is_error and result.raised,  # (no property call for a success)
    )


def collect(
    calls: tuple[ToolCallPart, ...],
    results: list[ToolResult | None],
    limit: int | None,
    progress: StepProgress,
    traced: tuple[Telemetry, Toolset],
) -> tuple[list[ToolResultPart], bool]:
    """The results for the model, each call's outcome kept in ``progress``; any failed?

    Calls with no result (the tail the step's share of tool calls cannot pay for) were
    refused: none of them ran, yet the trace (``traced``) shows them."""
    if results and results[-1] is None:
        refused_calls = calls[results.index(None) :]
        not_run(*traced, refused_calls, "budget_exhausted", over_share(limit))
    parts: list[ToolResultPart] = []
    failed, outcomes = False, progress.outcomes  # (the property once a reply, not a call)
    for call, result in zip(calls, results, strict=True):
        if result is None:  # the step's share cannot pay for it (the planner makes it an event)
            progress.refused_tool_calls += 1
            parts.append(refused(call, progress, over_share(limit), "budget_exhausted"))
            failed = True
            continue
        failed = failed or result.is_error
        outcomes.append(_outcome(call, result))
        text = content if isinstance(content := result.content, str) else result.text
        parts.append(ToolResultPart(call_id=call.id, content=text, is_error=result.is_error))
    return parts, failed


def cut_short(
    calls: tuple[ToolCallPart, ...],
    results: list[ToolResult | None],
    begun: set[int],
    first: int,
    progress: StepProgress,
) -> None:
    """The reply's calls were cut: keep in ``progress`` the outcome of each that ended
    (a sibling's, before the cut) and a ``cut`` outcome for each whose body started
    (its index, from ``first``, in ``begun``) and never finished."""
    for index, call in enumerate(calls):
        result = results[index]
        if result is not None:
            progress.outcomes.append(_outcome(call, result))
        elif first + index in begun:
            progress.outcomes.append(_not_ended(call, _CUT_TEXT.format(call.name), CUT))


def while_deciding(approver: Approver | None, begun: set[int], index: int) -> Approver | None:
    """``approver``, with call ``index`` out of ``begun`` while it waits for a decision
    (its body has not started); back in once it may run."""
    if approver is None:
        return None
    ask = approver

    async def decide(request: ApprovalRequest, /) -> ApprovalDecision:
        begun.discard(index)
        decision = await ask_approver(ask, request)
        if not isinstance(decision, Deny):
            begun.add(index)
        return decision

    return decide


def refused(
    call: ToolCallPart, progress: StepProgress, text: str, error_type: str
) -> ToolResultPart:
    """A call that is not run: an error the model sees, recorded like any outcome."""
    progress.outcomes.append(_not_ended(call, text, error_type))
    return ToolResultPart(call_id=call.id, content=text, is_error=True)


def _not_ended(call: ToolCallPart, text: str, error_type: str) -> ToolOutcome:
    """The outcome of a call that has no result of its own (refused, or cut mid-body)."""
    return ToolOutcome(
        tool=call.name,
        call_id=call.id,
        arguments=dict(call.arguments),
        content=text,
        is_error=True,
        error_type=error_type,
    )


def over_share(limit: int | None) -> str:
    # Said so the model can act on it: a model told only "used up" may ask again (and
    # each ask is a model call) until the step's max_iterations end it.
    return (
        f"not run: this step's tool call allowance of {limit} is used up; answer from the "
        "results you have (a tool call now is refused too, unless the run frees some)"
    )


def logged(outcome: ToolOutcome) -> str:
    """What the log line of a failed call says of it: its error type (``ValueError``,
    ``invalid_arguments``), not its message, which may quote the user's data (an
    exception's message, the arguments the model sent, an approver's reason); the model,
    the ``ToolFailed`` event and the step's report have it whole. A timeout's is ours."""
    if outcome.error_type == "timeout":
        return clipped(str(outcome.content))
    return outcome.error_type or "error"
