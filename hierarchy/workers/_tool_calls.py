"""A step's tool calls with something around them: spans, metrics, guards, siblings."""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable

import anyio
import msgspec

from regiment._json import JsonObject
from regiment.errors import GuardrailError
from regiment.hierarchy._messages import AssignStep
from regiment.hierarchy.guard._judge import judging_within
from regiment.hierarchy.guard._note import GuardNote
from regiment.hierarchy.guard._step import StepGuards, step_purse
from regiment.hierarchy.guard._tool_guard import edits_judged
from regiment.hierarchy.workers._approval_gate import Approvals
from regiment.hierarchy.workers._journal_calls import StepCalls
from regiment.hierarchy.workers._not_run import held_back
from regiment.hierarchy.workers._outcomes import while_deciding
from regiment.hierarchy.workers._progress import StepProgress
from regiment.hierarchy.workers._siblings import SiblingCalls
from regiment.hierarchy.workers._tool_span import measured, shown_tool, traced_call
from regiment.models import ToolCallPart
from regiment.telemetry import Telemetry
from regiment.tools import Approver, ToolResult, Toolset

__all__ = ("approver_of", "call_around")


async def call_around(
    toolset: Toolset,
    calls: tuple[ToolCallPart, ...],
    at: tuple[AssignStep, int, set[int]],
    progress: StepProgress,
    telemetry: Telemetry,
    journaled: StepCalls,
    results: list[ToolResult | None],
    guards: StepGuards | None,
    gate: Approvals | None,
) -> None:
    """Run ``calls`` (numbered from ``at[1]``) into ``results``, each in its span, metric
    and guards as the step has them; several at once."""
    assign, first, begun = at
    traced = telemetry.traced  # untraced: no span to open, nothing to record on one
    siblings = SiblingCalls(len(calls), progress) if len(calls) > 1 else None  # at once

    async def attempt(index: int, call: ToolCallPart) -> ToolResult:
        n = first + index  # the call's number in its step
        approver = approver_of(gate, toolset, (assign, n, begun), call, progress, siblings)
        if guards is None:
            begun.add(n)
            return await journaled.tool(toolset, n, call, approver)
        run = functools.partial(
            _fenced_tool, journaled, toolset, (assign, n, begun), approver, progress
        )
        return await _guarded(guards, journaled, call, (assign, progress, n), run, toolset)

    async def one(index: int, call: ToolCallPart) -> None:
        if not traced:
            result = await attempt(index, call)
        else:
            ran = functools.partial(attempt, index, call)
            replayed = functools.partial(journaled.replayed, first + index)
            result = await traced_call(telemetry, (toolset, call), progress, ran, replayed)
        if telemetry.metrics is not None:
            measured(telemetry.metrics, shown_tool(toolset, call.name), result)
        results[index] = result

    if siblings is None:  # one call needs no task group
        await one(0, calls[0])
    else:
        await siblings.run_all(one, calls)


def approver_of(
    gate: Approvals | None,
    toolset: Toolset,
    at: tuple[AssignStep, int, set[int]],
    call: ToolCallPart,
    progress: StepProgress,
    siblings: SiblingCalls | None,
) -> Approver | None:
    """Who decides call number ``at[1]``, if it needs approval; its body starts only once
    it is decided (out of ``at[2]`` while it waits)."""
    if gate is None:
        return None
    assign, n, begun = at
    approver = gate.approver(toolset, assign, n, call.name, progress)
    if approver is None:
        return None
    approver = edits_judged(approver)  # an edit meets the call's guards (``_tool_guard``)
    return while_deciding(siblings.held(approver) if siblings else approver, begun, n)


async def _guarded(
    guards: StepGuards,
    journaled: StepCalls,
    call: ToolCallPart,
    at: tuple[AssignStep, StepProgress, int],
    run: Callable[[ToolCallPart], Awaitable[ToolResult]],
    toolset: Toolset,
) -> ToolResult:
    """``call`` between its guards; one they answer without reaching the tool (refused, or
    rewritten into arguments that do not validate) is streamed as a failed call is, with
    the arguments they judged (as the guards before the one that refused it rewrote
    them), not the model's."""
    assign, progress, index = at
    reached: list[ToolCallPart] = []
    noted: list[GuardNote] = []  # what its call guards did: journaled with its intent
    judged: list[JsonObject] = []  # the arguments a fail_step guard tripped on

    async def reach(checked: ToolCallPart) -> ToolResult:
        reached.append(checked)
        journaled.noted(index, noted)
        return await run(checked)

    began = anyio.current_time()
    try:
        with judging_within(step_purse(assign.allowance, progress), journaled.judge_tape()):
            tool, passed = toolset.get(call.name), journaled.passed(index)
            result = await guards.call_tool(
                call, assign.step.id, progress, reach, tool, passed, noted, judged
            )
    except GuardrailError as exc:  # a `fail_step` trip
        if not reached:
            told = _with(call, judged[-1]) if judged else call
            journaled.unrun(told, type(exc).__name__, anyio.current_time() - began)
        raise
    if not reached:
        told = _with(call, result.arguments)
        journaled.unrun(told, result.error_type or "error", anyio.current_time() - began)
    return result


def _with(call: ToolCallPart, arguments: JsonObject) -> ToolCallPart:
    """``call`` with ``arguments`` (as its guards judged them)."""
    if arguments == call.arguments:
        return call
    return msgspec.structs.replace(call, arguments=arguments)


async def _fenced_tool(
    journaled: StepCalls,
    toolset: Toolset,
    at: tuple[AssignStep, int, set[int]],
    approver: Approver | None,
    progress: StepProgress,
    call: ToolCallPart,
) -> ToolResult:
    """Run call number ``at[1]`` once its guards let it through, unless the step's plan
    was fenced (or the step cut) while they judged it; then it is one of ``at[2]``."""
    assign, index, begun = at
    if progress.fenced(assign.plan_version):
        await held_back(progress, assign, (call,), None, toolset)
    begun.add(index)
    return await journaled.tool(toolset, index, call, approver)
