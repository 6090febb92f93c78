"""Tool calls a model asked for that do not run: :func:`not_run` traces them, and
:func:`held_back` keeps a step whose plan is over from starting any of them."""

from __future__ import annotations

import logging
from typing import NoReturn

import anyio
import anyio.lowlevel

from regiment.hierarchy._messages import AssignStep
from regiment.hierarchy.workers._progress import StepProgress
from regiment.hierarchy.workers._tool_span import shown_tool, tool_description
from regiment.models import ToolCallPart
from regiment.telemetry import Telemetry
from regiment.tools import Toolset

__all__ = ("held_back", "not_run")

_log = logging.getLogger("regiment.worker")


def not_run(
    telemetry: Telemetry,
    toolset: Toolset,
    calls: tuple[ToolCallPart, ...],
    error_type: str,
    text: str,
) -> None:
    """An ``execute_tool`` span for each call the model asked for that is not run (its
    reply was cut off, its step's share of tool calls is used up, its plan is over): the
    trace shows the call, with ``error.type`` saying why it did not run. The tool is not
    touched."""
    if not telemetry.traced:
        return
    recorder = telemetry.recorder
    for call in calls:
        name = shown_tool(toolset, call.name)  # not a made-up name: content
        description = tool_description(toolset, call.name)
        with telemetry.tool_span(
            name, call.id, agent_name=toolset.name, description=description
        ) as span:
            recorder.tool_arguments(span, call.arguments)
            recorder.tool_outcome(span, error_type, error_type=error_type, description=text)


async def held_back(
    progress: StepProgress,
    assign: AssignStep,
    calls: tuple[ToolCallPart, ...],
    telemetry: Telemetry | None,
    toolset: Toolset,
) -> NoReturn:
    """Start none of ``calls``: the step was cut, or its planner has fenced its plan
    version (``StepFence``: a replan, a pause, the run's end) while its worker is busy
    and has yet to read the step's cut. Wait for that cut, on its way to the worker: it
    ends the step as ``cancelled``, like a cut that came first (its report, dropped or
    kept as the run ends, lists no call of ``calls``). Each call is logged and, with
    ``telemetry``, traced as an ``execute_tool`` span with ``error.type`` ``cancelled``."""
    if not progress.stopped:  # fenced, not cut yet (a cut step ends at the checkpoint)
        fence = None if progress.fence is None else progress.fence.holding(assign.plan_version)
        why = f"plan v{assign.plan_version} is over: {fence.why if fence else 'cut'}"
        names = ", ".join(sorted({c.name for c in calls}))
        _log.info(
            "%s %s: %s; not starting %s",
            toolset.name,
            assign.step.id,
            why,
            names,
            extra={"run_id": assign.run_id, "step_id": assign.step.id, "tools": names},
        )
        if telemetry is not None:
            not_run(telemetry, toolset, calls, "cancelled", f"not run: {why}")
    await anyio.lowlevel.checkpoint_if_cancelled()
    await anyio.sleep_forever()  # until the step's cut cancels it
    raise AssertionError("unreachable")  # (sleep_forever returns only if cancelled)
