"""A tool call's guards beyond the call as the model made it: results as they leave them,
and the arguments a person's edit (``EditArguments``) gives the call.

The call guards judge a call before it asks for approval (the person sees what they
let through); an edit then replaces its arguments, and the call would run with them
unjudged: a ``tool_call`` guard that refuses refunds over 100 let a person's edit to
500 through. ``judging_edits`` runs a call with its guards at hand, and the approver of
each call that needs approval (``edits_judged``) has an edit judged by them before the
tool runs: rewritten as they rewrite it, denied (with their reason) where they refuse it,
and a ``fail_step`` guard's trip fails the step once the call is told it was denied.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from typing import final

import msgspec

from regiment._json import JsonObject, JsonValue
from regiment.errors import GuardrailError
from regiment.hierarchy.guard._types import Guardrail
from regiment.models import ToolCallPart
from regiment.tools import (
    ApprovalDecision,
    ApprovalRequest,
    Approver,
    Deny,
    EditArguments,
    Tool,
    ToolResult,
)

__all__ = ("EditCheck", "edit_check", "edits_judged", "flagged", "judging_edits", "refused")

Judge = Callable[[ToolCallPart, JsonObject], Awaitable[ToolCallPart | ToolResult]]
"""The call guards over a call with arguments as the tool's schema reads them: the call
as they leave it, or the result that answers it instead (``GuardrailError``: a
``fail_step`` guard tripped)."""

_CHECK: ContextVar[EditCheck | None] = ContextVar("regiment_edit_check", default=None)


@final
class EditCheck:
    """The guards of one tool call, for the arguments an edit gives it."""

    __slots__ = ("call", "judge", "tell", "tool", "tripped")

    def __init__(self, tool: Tool[..., object], call: ToolCallPart, judge: Judge) -> None:
        self.tool, self.call, self.judge = tool, call, judge
        self.tripped: GuardrailError | None = None  # a fail_step guard's, raised after
        # Who hears what the guards made of an edit: the call's run, through its approval
        # desk (set by the approver that asked it, see ``_approval_gate``).
        self.tell: Callable[[ApprovalDecision], Awaitable[None]] | None = None

    async def judged(self, edit: EditArguments) -> ApprovalDecision:
        """``edit`` as the guards leave it: the same, rewritten, or a denial."""
        validated = self.tool.validated(edit.arguments)
        if not isinstance(validated, dict):  # the tool's own error for them follows
            return edit
        call = msgspec.structs.replace(self.call, arguments=edit.arguments)
        try:
            checked = await self.judge(call, validated)
        except GuardrailError as exc:  # the step fails once the call is answered
            self.tripped = exc
            return Deny(reason=f"the edited arguments: {exc}")
        if isinstance(checked, ToolResult):  # refused (tell_model), or rewritten invalid
            return Deny(reason=f"the edited arguments: {checked.content}")
        if checked is call:
            return edit
        return EditArguments(arguments=dict(checked.arguments), reason=edit.reason)


async def judging_edits(
    run: Callable[[ToolCallPart], Awaitable[ToolResult]],
    call: ToolCallPart,
    check: EditCheck | None,
) -> ToolResult:
    """``run(call)``, an edit of its arguments judged by ``check``'s guards.

    Raises:
        GuardrailError: a ``fail_step`` guard tripped on the edited arguments.
    """
    if check is None:
        return await run(call)
    token = _CHECK.set(check)
    try:
        result = await run(call)
    finally:
        _CHECK.reset(token)
    if check.tripped is not None:
        raise check.tripped
    return result


def edits_judged(approver: Approver) -> Approver:
    """``approver``, its edits judged by the guards of the call it decides (if any)."""

    async def decide(request: ApprovalRequest, /) -> ApprovalDecision:
        decision = approver(request)
        if inspect.isawaitable(decision):
            decision = await decision
        check = _CHECK.get()
        if check is None or not isinstance(decision, EditArguments):
            return decision
        verdict = await check.judged(decision)
        if check.tell is not None:  # its run's resolution of the request says what runs
            await check.tell(verdict)
        return verdict

    return decide


def edit_check() -> EditCheck | None:
    """The guards of the tool call being decided now, if it has any."""
    return _CHECK.get()


def flagged(result: ToolResult, content: JsonValue, *, is_error: bool) -> ToolResult:
    """``result`` as a guard left it, its ``error_type`` agreeing with ``is_error``: an
    error made a success has none; a success made an error (rewritten, or withheld) is the
    guard's, ``"guardrail"``, not the tool's (``raised`` is then false: ``on_tool_error``
    does not act on it); an error that stays one keeps its type (withheld or reworded,
    the tool's failure is still what happened)."""
    if not is_error:
        error_type = None
    elif result.is_error:
        error_type = result.error_type
    else:
        error_type = "guardrail"
    return msgspec.structs.replace(
        result, content=content, is_error=is_error, error_type=error_type
    )


def refused(call: ToolCallPart, guard: Guardrail, reason: str, judged: JsonObject) -> ToolResult:
    """The result of ``call`` refused by ``guard``: with the arguments it ``judged``."""
    return ToolResult(
        call_id=call.id,
        tool_name=call.name,
        content=f"not run: guardrail '{guard.name}' refused this call: {reason}",
        is_error=True,
        error_type="guardrail",
        arguments=judged,
    )
