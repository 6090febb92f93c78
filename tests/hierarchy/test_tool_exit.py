"""A tool body that calls ``sys.exit()`` fails its call; it never ends the process.

Before, the ``SystemExit`` left the tool, the worker and the run, and asyncio and trio
both re-raised it out of the event loop: one tool ended every run of a service.
"""

from __future__ import annotations

import logging
import sys

import pytest

from regiment.hierarchy import Planner, Team, Worker
from regiment.models import (
    ModelRequest,
    ModelResponse,
    ScriptedModel,
    ToolResultPart,
    tool_call_response,
)
from regiment.tools import Tool, tool

from .brains import Brain, plan_json

pytestmark = pytest.mark.anyio

_SAYS = (
    "SystemExit: the tool called sys.exit(3); a tool cannot end the process, so this call failed"
)


@tool
def quit_in_thread(code: int) -> str:
    """Stop (a sync body, run in a worker thread)."""
    sys.exit(code)


@tool
async def quit_in_loop(code: int) -> str:
    """Stop (an async body, in the event loop's task)."""
    raise SystemExit(code)


@tool(timeout=5, retries=2)
async def quit_with_policy(code: int) -> str:
    """Stop, under a timeout and retries (the attempt loop's path)."""
    raise SystemExit(code)


@pytest.mark.parametrize("stop", [quit_in_thread, quit_in_loop, quit_with_policy])
async def test_sys_exit_in_a_tool_is_one_failed_call(stop: Tool[..., str]) -> None:
    result = await stop.call({"code": 3}, call_id="c")
    assert result.is_error
    assert (result.content, result.error_type) == (_SAYS, "SystemExit")
    assert result.attempts == 1  # an exit is never retried


async def test_a_run_whose_tool_exits_goes_on_and_logs_it(caplog: pytest.LogCaptureFixture) -> None:
    async def work(
        description: str, results: list[ToolResultPart], request: ModelRequest
    ) -> ModelResponse | str:
        if not results:
            return tool_call_response("quit_in_thread", {"code": 3})
        return f"the tool said: {results[0].content}"

    model = ScriptedModel(Brain([plan_json({"description": "stop"})], work=work))
    worker = Worker(name="w", description="stops", model=model, tools=[quit_in_thread])
    team = Team(name="t", planner=Planner(model=model), workers=[worker])
    with caplog.at_level(logging.WARNING, logger="regiment"):
        result = await team.run("goal")
    assert result.status == "completed"
    assert result.steps[0].output == f"the tool said: {_SAYS}"
    assert any("quit_in_thread failed: SystemExit" in r.getMessage() for r in caplog.records)
