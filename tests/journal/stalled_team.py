"""A team whose one step's tool is in flight when its process is SIGKILLed, for tests of
cancelling a run stalled mid-work (``cancel_paused``, ``POST /runs/{id}/cancel``).

The model (a stand-in provider) writes a line to a requests file as each call arrives;
the tool ``mark`` writes a line to a side-effect file each time its body runs. In the
child, the tool's first call says ``in tool`` and waits there to be killed.

Run as a script (``python stalled_team.py JOURNAL SIDE REQUESTS BACKEND``) it is the
child: it prints ``run RUN_ID`` when the run starts.
"""

from __future__ import annotations

import sys
from pathlib import Path

import anyio
import msgspec

from regiment import Planner, Price, ScriptedModel, Team, Worker, tool
from regiment.hierarchy import RunStarted
from regiment.models import (
    ModelRequest,
    ModelResponse,
    ModelSettings,
    TextPart,
    Usage,
    estimate_tokens,
    tool_call_response,
)

GOAL = "mark it"
PRICE = Price(input=1.0, output=2.0)


def make_team(side: Path, requests: Path, *, hang: bool = False) -> Team:
    """The team; ``hang``: the tool's body, once it ran, waits forever (the child's)."""

    @tool
    async def mark(text: str) -> str:
        """Mark something, once."""
        with side.open("a") as out:
            out.write(f"{text}\n")
        if hang:
            print("in tool", flush=True)
            await anyio.sleep_forever()
        return "marked"

    async def reply(request: ModelRequest) -> ModelResponse:
        with requests.open("a") as out:
            out.write(f"{request.role}\n")
        if request.role == "planner":
            text = '{"steps": [{"id": "s1", "description": "mark"}]}'
            response = ModelResponse(
                parts=(TextPart(text=text),), stop_reason="end_turn", model="stand-in"
            )
        elif request.role == "worker":
            response = tool_call_response("mark", {"text": "m1"})
        else:
            response = ModelResponse(
                parts=(TextPart(text="done"),), stop_reason="end_turn", model="stand-in"
            )
        usage = Usage(input_tokens=estimate_tokens(request), output_tokens=7)
        return msgspec.structs.replace(response, usage=usage, model="stand-in")

    model = ScriptedModel(reply, price=PRICE)
    return Team(
        name="marks",
        planner=Planner(model=model),
        workers=[Worker(name="w", description="marks", model=model, tools=[mark])],
        settings=ModelSettings(max_tokens=60),
    )


async def child(journal: str, side: str, requests: str) -> None:
    team = make_team(Path(side), Path(requests), hang=True)
    async with team.start(journal=journal) as running, running.stream(GOAL) as events:
        async for event in events:
            if isinstance(event, RunStarted):
                print("run", event.run_id, flush=True)
    print("finished", flush=True)  # the tool never let it


if __name__ == "__main__":
    journal, side, requests, backend = sys.argv[1:5]
    anyio.run(child, journal, side, requests, backend=backend)
