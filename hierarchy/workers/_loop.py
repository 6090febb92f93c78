"""A worker's bounded tool loop for one step: model call, tool calls, results back."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

import anyio

from regiment._text import clipped
from regiment.errors import ToolError
from regiment.hierarchy._messages import (
    AssignStep,
    StepContext,
    StepReport,
    ToolOutcome,
)
from regiment.hierarchy._model_call import ModelCaller
from regiment.hierarchy._prompts import Prompts
from regiment.hierarchy.guard._step import StepGuards
from regiment.hierarchy.plan._plan import PlanStep
from regiment.hierarchy.workers._approval_gate import Approvals
from regiment.hierarchy.workers._empty_reply import ask_again, empty_twice
from regiment.hierarchy.workers._journal_calls import StepCalls
from regiment.hierarchy.workers._journaled_caller import JournaledCaller
from regiment.hierarchy.workers._not_run import held_back, not_run
from regiment.hierarchy.workers._outcomes import (
    collect,
    cut_short,
    logged,
    refused,
)
from regiment.hierarchy.workers._progress import StepProgress
from regiment.hierarchy.workers._share import (
    tool_call_limit,
    tool_calls_across,
    within_allowance,
)
from regiment.hierarchy.workers._tool_calls import approver_of, call_around
from regiment.models import (
    STOPPED_EARLY,
    Message,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolResultPart,
)
from regiment.telemetry import Telemetry
from regiment.tools import OnToolError, ToolDefinition, ToolResult, Toolset

__all__ = ("StepProgress", "opening", "run_tool_loop")

_log = logging.getLogger("regiment.worker")


async def _call_tools(
    toolset: Toolset,
    calls: tuple[ToolCallPart, ...],
    assign: AssignStep,
    progress: StepProgress,
    telemetry: Telemetry,
    journaled: StepCalls | None,
    guards: StepGuards | None = None,
    gate: Approvals | None = None,
) -> tuple[list[ToolResultPart], bool]:
    """Run one response's tool calls at once (results in call order); did any fail? A step
    cut meanwhile ends here (``_stop_here``), its calls' outcomes kept.
    ``journaled`` is ``None`` only on a plain step's plain call (``_log_if_needed``): the step's
    own count numbers it, as a log made at its first call would (both start at 0)."""
    # (Asked only when a fence or a stop may say no; a step's share only when it caps calls.)
    if (progress.stopped or progress.fence is not None) and progress.fenced(assign.plan_version):
        await held_back(progress, assign, calls, telemetry, toolset)  # its plan is over: no tool
    if not progress.listed and progress.fence is not None:  # a replan that cuts it lists them
        progress.fence.calls(assign, progress)
    results: list[ToolResult | None] = [None] * len(calls)
    capped = (progress.allowance or assign.allowance).tool_calls is not None
    limit = tool_call_limit(assign, progress, len(calls)) if capped else None
    if limit is not None and progress.ask_more is not None:
        limit = await tool_calls_across(progress, limit, len(calls))
    allowed = len(calls) if limit is None else max(0, min(len(calls), limit - progress.tool_calls))
    progress.tool_calls += allowed
    first = progress.tool_calls - allowed if journaled is None else journaled.reserve(allowed)
    begun: set[int] = set()  # calls whose bodies started (a cut lists them: _outcomes)
    try:
        if allowed == 1 and guards is None and telemetry.metrics is None and not telemetry.traced:
            # The common case: one call, nothing around it (no task group, span, metric or
            # guard), so it is awaited here, with no closure made for it.
            call, at = calls[0], (assign, first, begun)
            approver = approver_of(gate, toolset, at, call, progress, None) if gate else None
            begun.add(first)
            if journaled is None:  # nothing to key, record, replay or stream
                results[0] = await toolset.call(
                    call.name, call.arguments, call_id=call.id, approver=approver
                )
            else:
                results[0] = await journaled.tool(toolset, first, call, approver)
        elif allowed:  # (_log_if_needed makes a log for every call but a plain step's one)
            assert journaled is not None, "a step's tool calls ran with no call log"
            at = (assign, first, begun)
            await call_around(
                toolset, calls[:allowed], at, progress, telemetry, journaled, results, guards, gate
            )
    except BaseException:
        cut_short(calls, results, begun, first, progress)
        raise
    made = collect(calls, results, limit, progress, (telemetry, toolset))
    if progress.stopped:
        await _stop_here()
    return made


# A cut reply may end inside a call's arguments, which a provider may read leniently
# (the Anthropic SDK reads the cut '{"amount": 15' of 1500 as 15): none are run.
_CUT_OFF = (
    "not run: your reply reached its max_tokens limit before it was finished, so this "
    "call's arguments may be cut short; call it again, with a shorter reply"
)


def _check_failures(
    outcomes: list[ToolOutcome],
    toolset: Toolset,
    assign: AssignStep,
    worker: str,
    on_tool_error: OnToolError,
) -> None:
    """Log the failed calls of one response; raise if one must fail the step."""
    fatal: list[str] = []
    for outcome in outcomes:
        if not outcome.is_error:
            continue
        where = {
            "run_id": assign.run_id,
            "step_id": assign.step.id,
            "worker": worker,
            "tool": outcome.tool,
            "call_id": outcome.call_id,
            "error_type": outcome.error_type,
        }
        # A tool that raised or hung is a bug or an outage to look at; a refused call is
        # the model's.
        looked_at = outcome.raised or outcome.error_type == "timeout"
        level = logging.WARNING if looked_at else logging.INFO
        _log.log(
            level,
            "%s %s: %s failed: %s",
            worker,
            assign.step.id,
            outcome.tool,
            logged(outcome),  # its type: the message may quote the user's data
            extra=where,
        )
        tool = toolset.get(outcome.tool)
        own = tool.policy.on_tool_error if tool is not None else None
        if outcome.raised and (own or on_tool_error) == "raise":
            fatal.append(f"tool '{outcome.tool}' failed: {outcome.content}")
    if fatal:
        raise ToolError("; ".join(fatal) + " (on_tool_error='raise' fails the step)")


def opening(
    prompts: Prompts,
    worker: str,
    description: str,
    system_prompt: str,
    step: PlanStep,
    context: StepContext,
) -> tuple[str, Message]:
    """A step's system prompt and first message: how every worker step begins
    (the planner estimates a step's first call from the same two)."""
    return _system(prompts, worker, description, system_prompt), _first_message(
        prompts, step, context
    )


def _system(prompts: Prompts, worker: str, description: str, system_prompt: str) -> str:
    """The worker's system prompt."""
    return prompts.worker_system(
        worker=worker, description=description, system_prompt=system_prompt
    )


def _first_message(prompts: Prompts, step: PlanStep, context: StepContext) -> Message:
    """The step's request, the first message of its conversation."""
    return Message(
        role="user", parts=(TextPart(text=prompts.step_request(step=step, context=context)),)
    )


async def run_tool_loop(  # at most 15 keywords a call: more, and 3.11 packs a dict (#22)
    *,
    worker: str,
    system: str,  # the worker's system prompt (made once, as its actor starts)
    max_iterations: int,
    toolset: Toolset,
    definitions: tuple[ToolDefinition, ...] | None = None,  # toolset's, if read already
    caller: ModelCaller,
    telemetry: Telemetry,
    prompts: Prompts,
    assign: AssignStep,
    progress: StepProgress,
    on_tool_error: OnToolError = "tell_model",
    approvals: Approvals | None = None,
    journaled: StepCalls | None = None,
    guards: StepGuards | None = None,
) -> StepReport:
    """Run one step to an answer, or to the iteration cap, or to the allowance's end. Raises
    ``ToolError`` if a tool raised and ``on_tool_error`` (its own, else this) is ``"raise"``."""
    tools, asked_again = toolset.definitions if definitions is None else definitions, False
    messages, journaled, call, limited = _begin(
        prompts, journaled, caller, guards, (assign, progress, worker, max_iterations)
    )
    for _ in range(max_iterations):
        request = _request(system, messages, tools, worker, assign.step.id)
        if limited:
            request, spent = await within_allowance(assign, progress, request, caller, worker)
            if spent is not None:
                return spent
        if call is not None:
            if (response := await call(request)) is None:
                continue  # a guard rejected the reply; the model is told why
        else:  # the model's own call, no coroutine around it (_begin, #22)
            try:
                reply = await caller.model.complete(request)
            except BaseException as exc:  # a cancellation or an interrupt, as a rule
                caller.failed(exc)
                raise
            response = caller.answered(reply, request)
        if not (tool_calls := progress.took(response)):  # answered (counted, its text kept)
            if progress.last_text.strip():
                return progress.report(assign, worker, "done")
            if asked_again:  # twice empty: the step fails
                return empty_twice(progress, assign, worker)
            asked_again = ask_again(messages, assign, worker)
            continue
        messages.append(Message(role="assistant", parts=response.parts))
        ran_before = len(progress.tool_outcomes or ())  # (read with no call: #22)
        if journaled is None:
            journaled = _log_if_needed(tool_calls, toolset, telemetry, assign, progress, worker)
        if response.stop_reason in STOPPED_EARLY and response.cut_off:
            results, failed = _cut_off(tool_calls, progress, telemetry, toolset)
        else:
            results, failed = await _call_tools(
                toolset, tool_calls, assign, progress, telemetry, journaled, guards, approvals
            )
        if failed:
            _check_failures(progress.outcomes[ran_before:], toolset, assign, worker, on_tool_error)
        messages.append(Message(role="user", parts=tuple(results)))
    return _capped(progress, assign, worker, max_iterations)


def _log_if_needed(
    calls: tuple[ToolCallPart, ...],
    toolset: Toolset,
    telemetry: Telemetry,
    assign: AssignStep,
    progress: StepProgress,
    worker: str,
) -> StepCalls | None:
    """The log of a step that had none (nothing replayed, journaled, streamed or charged
    if cut, no guards) once ``calls`` need it, numbering on from the step's own count;
    ``None`` (a plain call) for one call, untraced and unmeasured, of a tool that reads
    no context (a context's key is derived from the call's number)."""
    if len(calls) == 1 and not telemetry.traced and telemetry.metrics is None:
        found = toolset.get(calls[0].name)
        if found is None or not found.takes_context:
            return None
    journaled = StepCalls(None, assign, worker)
    journaled.reserve(progress.tool_calls)  # the calls numbered before it
    return journaled


def _cut_off(
    calls: tuple[ToolCallPart, ...], progress: StepProgress, telemetry: Telemetry, toolset: Toolset
) -> tuple[list[ToolResultPart], bool]:
    """A reply cut at its length limit: none of its calls run (the last one's arguments
    may be cut short); each gets a ``cut_off`` error result."""
    not_run(telemetry, toolset, calls, "cut_off", _CUT_OFF)
    return [refused(c, progress, _CUT_OFF, "cut_off") for c in calls], True


def _capped(
    progress: StepProgress, assign: AssignStep, worker: str, max_iterations: int
) -> StepReport:
    """The report of a step that reached its worker's iteration cap."""
    cap = (
        f"worker '{worker}' reached its cap of {max_iterations} model calls without a final answer"
    )
    if progress.outcomes and (last := progress.outcomes[-1]).is_error:
        # Why the loop went round, as a rule (the model kept sending bad arguments, say).
        cap += f"; its last tool call, {last.tool}, failed: {clipped(str(last.content), 300)}"
    return progress.report(assign, worker, "iteration_limit", error=cap)


async def _stop_here() -> None:
    """The step was cancelled while its tool calls finished anyway (a tool that shields
    itself or swallows the cancel; a model that awaits nothing would not notice): end
    the step now, as cancelled, instead of calling the model once more."""
    await anyio.lowlevel.checkpoint_if_cancelled()


def _begin(
    prompts: Prompts,
    journaled: StepCalls | None,
    caller: ModelCaller,
    guards: StepGuards | None,
    at: tuple[AssignStep, StepProgress, str, int],
) -> tuple[
    list[Message],
    StepCalls | None,
    Callable[[ModelRequest], Awaitable[ModelResponse | None]] | None,
    bool,
]:
    """How a step begins: its conversation (the step's request, as ``_first_message``
    makes it, spelled out here: one call less a step, #22); its calls (journaled and
    replayed by key; with nothing to replay, journal or stream, and no guards, none
    until it calls a tool: ``run_tool_loop`` makes them then); how it calls its model:
    replayed or journaled, between its guards if any, or (``None``: when nothing is around
    the call, the loop awaits the model itself, no bound method made a step, #22); and
    whether each call is checked against the step's allowance first (``within_allowance``).

    A check can stop the step only if its allowance caps tokens, input, output or
    money, or fewer model calls than its loop may make (``at``'s iterations more, one
    each, unless guards count rejected replies too). A step whose only cap is its
    iteration cap (a run with no money or token limit, #22) is checked by its loop."""
    assign, progress, worker, iterations = at
    request = prompts.step_request(step=assign.step, context=assign.context)
    progress.messages = messages = [Message(role="user", parts=(TextPart(text=request),))]
    a = assign.allowance
    limited = (
        a.tokens is not None
        or a.input_tokens is not None
        or a.output_tokens is not None
        or a.micro_usd is not None
        or (
            a.model_calls is not None
            and (guards is not None or progress.model_calls + iterations > a.model_calls)
        )
    )
    if guards is None:  # no JournaledCaller in between: its call would only forward
        if journaled is None:  # nothing replayed, journaled or streamed: the model's own call
            # (a StepCalls once a tool is called); with nothing around it (no settings to
            # merge, metrics or span), awaited by the loop itself: ``None``
            t = caller.telemetry
            if caller.settings is None and t.metrics is None:  # traced: the span's call itself
                return messages, None, caller.traced if t.traced else None, limited
            return messages, None, caller.call, limited
        return messages, journaled, journaled.model_call(caller), limited
    journaled = journaled or StepCalls(None, assign, worker)
    model = JournaledCaller(journaled, caller, held=bool(guards.reply))
    call = guards.caller(model, assign, progress, messages, journaled.judge_tape())
    return messages, journaled, call, limited


def _request(
    system: str,
    messages: list[Message],
    tools: tuple[ToolDefinition, ...],
    worker: str,
    step_id: str,
) -> ModelRequest:
    """The step's next model request: the conversation so far, with the worker's tools."""
    return ModelRequest(
        system=system,
        messages=tuple(messages),
        tools=tools,
        role="worker",
        worker=worker,
        step_id=step_id,
    )
