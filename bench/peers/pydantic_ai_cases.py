# mypy: ignore-errors
"""Pydantic AI's side of row 3: an ``Agent`` with one tool, driven by a ``FunctionModel``.

The function asks for the tool, then answers once the tool's result is back:
model -> tool -> model, the same as regiment's one-tool worker step. Its replies
carry a usage, so no token estimate is made (regiment's scripted replies do too).
"""

import asyncio
import time

from bench_util import REPEATS, TOOL_RUNS, median
from pydantic_ai import Agent
from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.usage import RequestUsage

USAGE = RequestUsage(input_tokens=10, output_tokens=5)


async def brain(messages, info: AgentInfo) -> ModelResponse:
    last = messages[-1]
    if any(isinstance(part, ToolReturnPart) for part in last.parts):
        return ModelResponse(parts=[TextPart("done")], usage=USAGE)
    return ModelResponse(parts=[ToolCallPart("noop", {}, tool_call_id="c1")], usage=USAGE)


def one_tool():
    agent = Agent(FunctionModel(brain), instructions="You are worker 'w'.")

    @agent.tool_plain
    async def noop() -> str:
        """Do nothing and say so."""
        return "ok"

    async def measure() -> float:
        start = time.perf_counter()
        for _ in range(TOOL_RUNS):
            result = await agent.run("call the tool once")
            assert result.output == "done", result.output
        return (time.perf_counter() - start) / TOOL_RUNS

    async def main() -> float:
        await measure()
        return median([await measure() for _ in range(REPEATS)])

    return {"run_us": asyncio.run(main()) * 1e6}


CASES = {"one_tool": one_tool}
