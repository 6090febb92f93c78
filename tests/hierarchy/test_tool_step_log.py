"""A step's call log on a plain tool call (issue #22, row 3): a step with nothing to
replay, journal, stream or charge if cut, and no guards, calls a tool that reads no
context with no ``StepCalls`` made and no ``StepCalls.tool`` coroutine around the call;
the step's own count numbers it (``test_derived_keys.py`` proves the keys unchanged). A
call that needs the log still makes it: a context tool's (its key is derived from the
call's number), or any call of a journaled run. Counted by the interpreter's profiler
over warmed runs, so the counts are exact on either backend."""

from __future__ import annotations

import dis
import json
from pathlib import Path
from types import FrameType

import pytest

from regiment import Planner, RunContext, ScriptedModel, Team, Worker, tool
from regiment.hierarchy.workers._journal_calls import StepCalls
from regiment.models import ModelRequest, ModelResponse, ToolResultPart, tool_call_response

from .profiled import CallCounter

pytestmark = pytest.mark.anyio

_STEPS = 3
_MADE, _TOOL = StepCalls.__init__.__code__, StepCalls.tool.__code__
# Where ``StepCalls.tool``'s frame stands as it first runs (a resume stands further on).
_FIRST = next(i.offset for i in dis.get_instructions(_TOOL) if i.opname == "RESUME")


@tool
async def ping() -> str:
    """Say pong."""
    return "pong"


@tool
async def whose(ctx: RunContext[object]) -> str:
    """Say whose call this is."""
    return ctx.idempotency_key


def _team(name: str) -> Team:
    plan = json.dumps({"steps": [{"id": f"s{n}", "description": "go"} for n in range(_STEPS)]})

    async def brain(request: ModelRequest) -> ModelResponse | str:
        if request.role == "planner":
            return plan
        if request.role != "worker":
            return "answer"
        last = request.messages[-1].parts
        if any(isinstance(p, ToolResultPart) for p in last):
            return "done"
        return tool_call_response(name, {})

    model = ScriptedModel(brain)
    worker = Worker(name="w", description="works", model=model, tools=[ping, whose])
    return Team(name="log", planner=Planner(model=model), workers=[worker])


async def _log_calls(name: str, journal: Path | None = None) -> int:
    """``StepCalls`` made and ``StepCalls.tool`` calls entered in a warmed run."""

    def entered(frame: FrameType, event: str, _: object) -> bool:
        code = frame.f_code
        return event == "call" and (code is _MADE or (code is _TOOL and frame.f_lasti == _FIRST))

    counter = CallCounter(entered)
    async with _team(name).start(journal=journal) as running:
        assert (await running.run("warm up")).status == "completed"
        with counter:
            result = await running.run("go")
    assert result.status == "completed"
    assert result.tool_calls == _STEPS
    return counter.count


async def test_a_plain_steps_plain_tool_call_makes_no_call_log() -> None:
    assert await _log_calls("ping") == 0  # main: 2 a step (the log, its tool coroutine)


async def test_a_call_that_needs_the_log_still_makes_it(tmp_path: Path) -> None:
    assert await _log_calls("whose") == 2 * _STEPS  # its key: the call's number
    assert await _log_calls("ping", tmp_path / "runs.db") == 2 * _STEPS  # journaled
