"""What a worker's step costs beyond its model and its tool (issue #22): a reply with
one tool call, in a step with no guards, spans or metrics, runs the call with nothing
made around it, and a step nothing records asks its model with no frame in between.
Counted exactly by the interpreter's profiler over a warmed-up team's run."""

from __future__ import annotations

import typing
from pathlib import Path
from types import FrameType

import pytest

from regiment.hierarchy import Planner, Team, Worker
from regiment.hierarchy.workers._journal_calls import StepCalls
from regiment.models import (
    ModelRequest,
    ModelResponse,
    ScriptedModel,
    ToolResultPart,
    tool_call_response,
)
from regiment.tools import tool

from .brains import Brain, plan_json
from .profiled import CallCounter, Matches

pytestmark = pytest.mark.anyio

_ROOT = Path(__file__).resolve().parents[2]  # the regiment package
_TOOLS, _WORKERS = str(_ROOT / "tools"), str(_ROOT / "hierarchy" / "workers")
_TYPING = (typing.__file__, "<frozen _collections_abc>")


@tool
async def noop() -> str:
    """Do nothing."""
    return "ok"


async def _call_once(
    description: str, results: list[ToolResultPart], request: ModelRequest
) -> ModelResponse | str:
    return "done" if results else tool_call_response("noop", {}, call_id="c1")


async def _counted(matches: Matches) -> int:
    """How many calls ``matches`` accepts in one 1-step run whose step calls a tool once."""
    brain = Brain([plan_json({"description": "call it"})] * 2, work=_call_once)
    model = ScriptedModel(brain)
    team = Team(
        name="tooled",
        planner=Planner(model=model),
        workers=[Worker(name="w", description="calls noop", model=model, tools=[noop])],
    )
    counter = CallCounter(matches)
    async with team.start() as running:
        assert (await running.run("warm up")).status == "completed"
        with counter:
            result = await running.run("do it")
    assert result.status == "completed"
    assert [o.tool for o in result.steps[0].tool_outcomes] == ["noop"]
    return counter.count


async def test_a_tool_call_makes_no_typing_call() -> None:
    # cast(Callable[..., Awaitable[object]], fn) built two generic aliases a call.
    def typing_from_tools(frame: FrameType, event: str, _: object) -> bool:
        caller = frame.f_back
        return (
            event == "call"
            and frame.f_code.co_filename in _TYPING
            and caller is not None
            and caller.f_code.co_filename.startswith(_TOOLS)
        )

    assert await _counted(typing_from_tools) == 0


async def test_a_tool_asked_whether_it_takes_a_context_looks_nothing_up() -> None:
    # Asked twice a call (by the step's calls, then by the tool): found once, when made.
    def getattr_in_tools(frame: FrameType, event: str, called: object) -> bool:
        return (
            event == "c_call" and called is getattr and frame.f_code.co_filename.startswith(_TOOLS)
        )

    assert await _counted(getattr_in_tools) == 0


async def test_a_lone_tool_call_runs_with_no_closure_around_it() -> None:
    # The common reply (one call; no guards, spans or metrics) awaits the call itself:
    # no per-reply closures, no coroutine in between.
    def closure_in_workers(frame: FrameType, event: str, _: object) -> bool:
        code = frame.f_code
        return (
            event == "call"
            and "<locals>" in code.co_qualname
            and code.co_filename.startswith(_WORKERS)
        )

    assert await _counted(closure_in_workers) == 0


async def test_a_step_nothing_records_asks_its_model_with_no_frame_between() -> None:
    # With no journal, no replay and no stream, StepCalls.model would only forward.
    forwards = StepCalls.model.__code__

    def forwarded(frame: FrameType, event: str, _: object) -> bool:
        return event == "call" and frame.f_code is forwards

    assert await _counted(forwarded) == 0


async def test_a_reply_s_call_asks_no_share_and_reads_its_result_once() -> None:
    # No cap on tool calls: the step's share is not asked for (tool_call_limit); a text
    # result that did not fail is not asked for its text or whether it raised (properties).
    from regiment.hierarchy import _text
    from regiment.hierarchy.workers import _share
    from regiment.tools import ToolResult

    asked = {
        _share.tool_call_limit.__code__,
        typing.cast(property, ToolResult.text).fget.__code__,  # type: ignore[union-attr]
        typing.cast(property, ToolResult.raised).fget.__code__,  # type: ignore[union-attr]
    }

    cleaning = _text.valid_text.__code__  # an ASCII call id and tool name need none
    in_a_part = _text._valid_part.__code__

    def asked_for(frame: FrameType, event: str, _: object) -> bool:
        if event != "call":
            return False
        caller = frame.f_back
        return frame.f_code in asked or (
            frame.f_code is cleaning and caller is not None and caller.f_code is in_a_part
        )

    assert await _counted(asked_for) == 0
