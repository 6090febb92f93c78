"""A worker's bounded tool loop for one step: model call, tool calls, results back."""

from __future__ import annotations

from dataclasses import dataclass, field

import anyio

from regiment.hierarchy._messages import AssignStep, StepReport, StepStatus, ToolOutcome
from regiment.hierarchy._model_call import ModelCaller
from regiment.hierarchy._prompts import Prompts
from regiment.models import (
    Message,
    ModelRequest,
    ModelResponse,
    ToolCallPart,
    ToolResultPart,
    Usage,
)
from regiment.telemetry import Telemetry, record_tool_outcome
from regiment.tools import ToolResult, Toolset

__all__ = ("StepProgress", "run_tool_loop")


@dataclass(slots=True)
class StepProgress:
    """What a step has spent and found so far; kept outside the loop so a step
    that times out or is cancelled still reports what it did."""

    usage: Usage = field(default_factory=Usage)
    model_calls: int = 0
    tool_calls: int = 0
    outcomes: list[ToolOutcome] = field(default_factory=list)
    last_text: str = ""

    def report(
        self,
        assign: AssignStep,
        worker: str,
        status: StepStatus,
        *,
        output: str | None = None,
        error: str | None = None,
    ) -> StepReport:
        """A report carrying this progress."""
        return StepReport(
            run_id=assign.run_id,
            plan_version=assign.plan_version,
            step_id=assign.step.id,
            attempt=assign.attempt,
            worker=worker,
            status=status,
            output=self.last_text if output is None else output,
            tool_outcomes=tuple(self.outcomes),
            usage=self.usage,
            model_calls=self.model_calls,
            tool_calls=self.tool_calls,
            error=error,
        )


def _out_of_allowance(assign: AssignStep, progress: StepProgress) -> str | None:
    allowance = assign.allowance
    if allowance.model_calls is not None and progress.model_calls >= allowance.model_calls:
        return f"model call allowance of {allowance.model_calls} used up"
    if allowance.tokens is not None and progress.usage.total_tokens >= allowance.tokens:
        return f"token allowance of {allowance.tokens} used up"
    return None


async def _call_tools(
    toolset: Toolset,
    calls: tuple[ToolCallPart, ...],
    assign: AssignStep,
    progress: StepProgress,
    telemetry: Telemetry,
) -> list[ToolResultPart]:
    """Run one response's tool calls at the same time; results keep the call order."""
    results: list[ToolResult | None] = [None] * len(calls)
    limit = assign.allowance.tool_calls

    async def one(index: int, call: ToolCallPart) -> None:
        with telemetry.tool_span(call.name, call.id, agent_name=toolset.name) as span:
            telemetry.record_tool_arguments(span, call.arguments)
            result = await toolset.call(call.name, call.arguments, call_id=call.id)
            failure = (result.error_type or "error") if result.is_error else None
            record_tool_outcome(span, failure or "ok", error_type=failure)
            telemetry.record_tool_result(span, result.content)
        results[index] = result

    allowed = len(calls) if limit is None else max(0, min(len(calls), limit - progress.tool_calls))
    progress.tool_calls += allowed
    if allowed == 1:  # the common case needs no task group
        await one(0, calls[0])
    elif allowed > 1:
        async with anyio.create_task_group() as tg:
            for index in range(allowed):
                tg.start_soon(one, index, calls[index])
    parts: list[ToolResultPart] = []
    for call, result in zip(calls, results, strict=True):
        if result is None:
            parts.append(
                ToolResultPart(
                    call_id=call.id,
                    content=f"not run: tool call allowance of {limit} used up",
                    is_error=True,
                )
            )
            continue
        progress.outcomes.append(
            ToolOutcome(
                tool=call.name,
                call_id=call.id,
                arguments=dict(result.arguments),
                content=result.content,
                is_error=result.is_error,
                idempotency_key=result.idempotency_key,
            )
        )
        parts.append(ToolResultPart(call_id=call.id, content=result.text, is_error=result.is_error))
    return parts


def _assistant_message(response: ModelResponse) -> Message:
    return Message(role="assistant", parts=response.parts)


async def run_tool_loop(
    *,
    worker: str,
    description: str,
    system_prompt: str,
    max_iterations: int,
    toolset: Toolset,
    caller: ModelCaller,
    telemetry: Telemetry,
    prompts: Prompts,
    assign: AssignStep,
    progress: StepProgress,
) -> StepReport:
    """Run one step to an answer, or to the iteration cap, or to the allowance's end."""
    system = prompts.worker_system(
        worker=worker, description=description, system_prompt=system_prompt
    )
    messages: list[Message] = [
        Message.user(prompts.step_request(step=assign.step, context=assign.context))
    ]
    for _ in range(max_iterations):
        if (reason := _out_of_allowance(assign, progress)) is not None:
            return progress.report(assign, worker, "budget_exhausted", error=reason)
        request = ModelRequest(
            system=system,
            messages=tuple(messages),
            tools=toolset.definitions,
            role="worker",
            worker=worker,
            step_id=assign.step.id,
        )
        response = await caller.call(request)
        progress.model_calls += 1
        progress.usage = progress.usage + response.usage
        progress.last_text = response.text
        if not response.tool_calls:
            return progress.report(assign, worker, "done")
        messages.append(_assistant_message(response))
        results = await _call_tools(toolset, response.tool_calls, assign, progress, telemetry)
        messages.append(Message(role="user", parts=tuple(results)))
    return progress.report(
        assign,
        worker,
        "iteration_limit",
        error=f"worker '{worker}' reached its cap of {max_iterations} model calls without a final answer",
    )
