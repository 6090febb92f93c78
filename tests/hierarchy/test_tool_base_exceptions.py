"""A tool body that raises asyncio's ``CancelledError`` on its own (nothing cancelled
its call), or another ``BaseException`` such as ``GeneratorExit``, fails its call.

Before, on asyncio the ``CancelledError`` ended the worker's task as if it had been
cancelled: that step was reported "cancelled: worker stopped", and every later run of
the started team failed with ``ActorStopped: actor 't/w' has stopped``. On trio it (or
a ``GeneratorExit``) left the team's task group and ended ``team.start()`` itself.
"""

from __future__ import annotations

import asyncio

import pytest

from regiment.hierarchy import Budget, Planner, Team, Worker
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


@tool
async def cancels_itself(n: int) -> int:
    """Gives up the way a careless library does (an async body, in the loop's task)."""
    if n == 1:
        raise asyncio.CancelledError
    return n


@tool
def cancels_in_thread(n: int) -> int:
    """The same, in a sync body run in a worker thread."""
    if n == 1:
        raise asyncio.CancelledError
    return n


@tool(timeout=5, retries=2)
async def exits_generator(n: int) -> int:
    """Raises GeneratorExit, under a timeout and retries (the attempt loop's path)."""
    if n == 1:
        raise GeneratorExit
    return n


_CANCELLED = (
    "CancelledError: the tool raised CancelledError while nothing had cancelled its call; "
    "a tool must not raise it itself (raise an Exception, such as TimeoutError or RuntimeError)"
)
_GENERATOR = (
    "GeneratorExit: the tool raised GeneratorExit (a BaseException, as only interrupts and "
    "cancellations are); a tool must not raise it itself (raise an Exception, such as "
    "TimeoutError or RuntimeError)"
)


@pytest.mark.parametrize(
    ("body", "says"),
    [(cancels_itself, _CANCELLED), (cancels_in_thread, _CANCELLED), (exits_generator, _GENERATOR)],
)
async def test_a_base_exception_a_tool_raises_is_one_failed_call(
    body: Tool[..., int], says: str
) -> None:
    result = await body.call({"n": 1}, call_id="c")
    assert result.is_error
    assert result.content == says
    assert result.attempts == 1  # never retried


@pytest.mark.parametrize("body", [cancels_itself, cancels_in_thread, exits_generator])
async def test_the_worker_goes_on_serving_runs(body: Tool[..., int]) -> None:
    async def work(
        description: str, results: list[ToolResultPart], request: ModelRequest
    ) -> ModelResponse | str:
        if not results:
            return tool_call_response(body.name, {"n": 1 if "bad" in description else 2})
        return f"the tool said: {results[0].content}"

    model = ScriptedModel(
        Brain(
            [plan_json({"description": "bad call"}), plan_json({"description": "good call"})],
            work=work,
        )
    )
    worker = Worker(name="w", description="calls", model=model, tools=[body])
    team = Team(name="t", planner=Planner(model=model), workers=[worker], budget=Budget(replans=0))
    async with team.start() as running:
        first = await running.run("first")
        second = await running.run("second")
    assert first.status == second.status == "completed"
    assert first.steps[0].tool_outcomes[0].is_error
    assert second.steps[0].output == "the tool said: 2"
