"""A service whose one tool ``charge`` writes a line to a side-effect file each time its
body runs, for the ``Idempotency-Key`` crash test.

    python keyed_child.py JOURNAL SIDE [hang]

serves ``create_app(team, journal=JOURNAL)`` under uvicorn and prints ``url URL``; with
``hang`` the tool, once it has written its line, says ``in tool`` and waits to be killed.
"""

from __future__ import annotations

import sys
from pathlib import Path

import anyio

from examples.service.serving import serving
from regiment.hierarchy import Planner, Team, Worker
from regiment.models import ModelRequest, ModelResponse, ScriptedModel, tool_call_response
from regiment.serve import create_app
from regiment.tools import tool
from tests.hierarchy.brains import Brain, plan_json, tool_results


def make_team(side: Path, *, hang: bool) -> Team:
    @tool
    async def charge(order_id: str) -> str:
        """Charge an order."""
        with side.open("a") as out:
            out.write(f"{order_id}\n")
        if hang:
            print("in tool", flush=True)
            await anyio.sleep_forever()
        return f"charged {order_id}"

    async def work(description: str, results: object, request: ModelRequest) -> ModelResponse | str:
        if not tool_results(request):
            return tool_call_response("charge", {"order_id": "7"})
        return "charged order 7"

    plan = plan_json({"id": "s1", "description": "charge order 7", "worker": "billing"})
    model = ScriptedModel(Brain(plans=[plan], work=work))
    billing = Worker(name="billing", description="charges", model=model, tools=[charge])
    return Team(name="desk", planner=Planner(model=model), workers=[billing])


async def main(*args: str) -> None:
    journal, side, *rest = args
    app = create_app(make_team(Path(side), hang="hang" in rest), journal=journal)
    async with serving(app) as url:
        print(f"url {url}", flush=True)
        await anyio.sleep_forever()


if __name__ == "__main__":
    anyio.run(main, *sys.argv[1:])
