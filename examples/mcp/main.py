"""A worker whose tools come from an MCP server (examples/mcp/notes_server.py).

The team starts the server when it starts and stops it when it stops; the
scripted brain stands in for Claude, so this runs offline::

    .venv/bin/python examples/mcp/main.py
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from regiment import run_main
from regiment.hierarchy import Planner, Team, Worker
from regiment.models import (
    ModelRequest,
    ModelResponse,
    ScriptedModel,
    ToolResultPart,
    tool_call_response,
)
from regiment.tools import MCPServer

SERVER = Path(__file__).with_name("notes_server.py")


def brain(request: ModelRequest) -> ModelResponse | str:
    """Plan one step; the worker reads a note through the server's tool; then answer."""
    if request.role in ("planner", "replanner"):
        return json.dumps({"steps": [{"description": "read the groceries note"}]})
    if request.role == "worker":
        results = [p for p in request.messages[-1].parts if isinstance(p, ToolResultPart)]
        if results:
            return f"the note says: {results[0].content}"
        return tool_call_response("notes_read_note", {"title": "groceries"})
    return "Groceries: oats, coffee, lemons."


async def main() -> None:
    model = ScriptedModel(brain)
    notes = MCPServer.stdio([sys.executable, str(SERVER)], prefix="notes_")
    team = Team(
        name="assistant",
        planner=Planner(model=model),
        workers=[
            Worker(name="clerk", description="reads and writes notes", model=model, tools=[notes])
        ],
    )
    result = await team.run("What is on my grocery list?")  # starts and stops the server
    (step,) = result.steps
    for outcome in step.tool_outcomes:
        print(f"tool call: {outcome.tool}({json.dumps(outcome.arguments)}) -> {outcome.content}")
    print("step:", step.output)
    print("answer:", result.answer)


if __name__ == "__main__":
    # It takes no arguments: -h says what it does; any other is a usage error (exit 2).
    argparse.ArgumentParser(description=__doc__).parse_args()
    run_main(main)  # anyio.run(main), quiet when piped into `head`
