"""One tool call of a step in its ``execute_tool`` span (when tracing is on)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import anyio

from regiment.hierarchy.workers._progress import StepProgress
from regiment.models import ToolCallPart
from regiment.telemetry import RunMetrics, Telemetry
from regiment.telemetry import semconv as sc
from regiment.tools import ToolResult, Toolset

__all__ = ("measured", "shown_tool", "tool_description", "traced_call")


async def traced_call(
    telemetry: Telemetry,
    call: tuple[Toolset, ToolCallPart],
    progress: StepProgress,
    attempt: Callable[[], Awaitable[ToolResult]],
    replayed: Callable[[], bool],
) -> ToolResult:
    """Run ``attempt`` (the call, approvals and guards included) in the call's span.

    ``call`` is the tool set and the call. A call its run's pause cut while it
    waited for a decision was not called off: its span says ``awaiting_approval`` (set
    as the wait was cut) with no cancelled marker; any other cut reads cancelled.
    """
    toolset, part = call
    held: BaseException | None = None
    name = shown_tool(toolset, part.name)
    with telemetry.tool_span(
        name, part.id, agent_name=toolset.name, description=tool_description(toolset, part.name)
    ) as span:
        telemetry.recorder.tool_arguments(span, part.arguments)
        try:
            result = await attempt()
        except anyio.get_cancelled_exc_class() as exc:
            if not (progress.paused and progress.awaiting):
                raise
            held = exc  # raised below, once the span has ended as a wait
        else:
            if replayed():  # it did not run again: say so
                span.set_attribute(sc.REGIMENT_REPLAYED, True)
            if result.is_error:  # why, as the model was told (content: its length only)
                failure = result.error_type or sc.ERROR_OTHER
                telemetry.recorder.tool_outcome(
                    span, failure, error_type=failure, description=result.text, raised=result.raised
                )
            else:
                telemetry.recorder.tool_outcome(span, "ok")
            telemetry.recorder.tool_result(span, result.content)
    if held is not None:
        raise held
    return result


def shown_tool(toolset: Toolset, name: str) -> str:
    """The tool's name as a span's name, ``gen_ai.tool.name`` and a metric show it: the
    name itself for a tool of ``toolset``, else ``_OTHER``. A name the model made up is
    text it wrote, which content capture off must keep out (``email ann@example.com``),
    and without bound (a metric's series per name)."""
    return name if name in toolset else sc.ERROR_OTHER


def tool_description(toolset: Toolset, name: str) -> str | None:
    """The description of ``toolset``'s tool ``name`` (its docstring, or what its MCP
    server lists), for ``gen_ai.tool.description``; ``None`` for a name not the worker's."""
    tool = toolset.get(name)
    return None if tool is None else tool.description


def measured(metrics: RunMetrics, tool: str, result: ToolResult) -> None:
    """Count one tool call's outcome and duration in ``metrics``."""
    outcome = (result.error_type or sc.ERROR_OTHER) if result.is_error else "ok"
    metrics.tool_call(tool, outcome, result.duration_s)
