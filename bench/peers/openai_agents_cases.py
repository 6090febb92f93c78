# mypy: ignore-errors
"""The OpenAI Agents SDK's side of row 3: ``Runner.run`` with one tool and a fake model.

The fake ``Model`` asks for the tool, then answers once the tool's output is in
its input: model -> tool -> model. Tracing is disabled (it would export to the
vendor's backend otherwise), which is also the cheapest setting.
"""

import asyncio
import time

from agents import Agent, RunConfig, Runner, function_tool, set_tracing_disabled
from agents.items import ModelResponse
from agents.models.interface import Model
from agents.usage import Usage
from bench_util import REPEATS, TOOL_RUNS, median
from openai.types.responses import (
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
)

CALL = ResponseFunctionToolCall(
    id="1", call_id="c1", type="function_call", name="noop", arguments="{}"
)
ANSWER = ResponseOutputMessage(
    id="2",
    type="message",
    role="assistant",
    content=[ResponseOutputText(text="done", type="output_text", annotations=[])],
    status="completed",
)


class FakeModel(Model):
    async def get_response(self, system_instructions, input, *args, **kwargs) -> ModelResponse:
        called = isinstance(input, list) and any(
            isinstance(item, dict) and item.get("type") == "function_call_output" for item in input
        )
        output = [ANSWER] if called else [CALL]
        return ModelResponse(
            output=output,
            usage=Usage(requests=1, input_tokens=10, output_tokens=5, total_tokens=15),
            response_id=None,
        )

    def stream_response(self, *args, **kwargs):
        raise NotImplementedError("the benchmark does not stream")


@function_tool
async def noop() -> str:
    """Do nothing and say so."""
    return "ok"


def one_tool():
    set_tracing_disabled(True)
    agent = Agent(name="w", instructions="You are worker 'w'.", model=FakeModel(), tools=[noop])
    config = RunConfig(tracing_disabled=True)

    async def measure() -> float:
        start = time.perf_counter()
        for _ in range(TOOL_RUNS):
            result = await Runner.run(agent, "call the tool once", run_config=config)
            assert result.final_output == "done", result.final_output
        return (time.perf_counter() - start) / TOOL_RUNS

    async def main() -> float:
        await measure()
        return median([await measure() for _ in range(REPEATS)])

    return {"run_us": asyncio.run(main()) * 1e6}


CASES = {"one_tool": one_tool}
