"""A team whose worker's own model refuses its step's call, reporting what the refusal
cost (``ModelRefused(usage=...)``), for tests that such a call is journaled as answered
(its intent closed): a resume, or the cancel of a stalled run, charges it once, at what
it reported, never again as a call in flight, and never asks the model again.

Step ``s1`` (worker ``drafter``) is refused and fails; the replan's step ``s2`` (worker
``clerk``) calls ``refund``, which needs an approval (the run pauses there), or, in the
child (``hang``), says ``in tool`` and waits to be killed.

Run as a script (``python refusing_worker_team.py JOURNAL BACKEND``) it is the child: it
prints ``run RUN_ID`` when the run starts.
"""

from __future__ import annotations

import dataclasses
import json
import sys

import anyio

from regiment import Budget, Planner, Price, ScriptedModel, Team, Worker, tool
from regiment.errors import ModelRefused
from regiment.hierarchy import Ray, RunStarted
from regiment.models import ModelRequest, ModelResponse, ToolCallPart, ToolResultPart, Usage

GOAL = "draft, then refund order 7"
PRICE = Price(input=1.0, output=1.0)
REFUSAL = Usage(input_tokens=9, output_tokens=2, micro_usd=11)  # what the refusal reports
REFUSAL_CALLS = 2  # the model calls it says it took


def _plan(*steps: tuple[str, str, str]) -> str:
    return json.dumps({"steps": [{"id": i, "description": d, "worker": w} for i, d, w in steps]})


def _reply(request: ModelRequest) -> str | ModelResponse:
    if request.role == "planner":
        return _plan(("s1", "draft", "drafter"))
    if request.role == "replanner":  # s1 failed: the refund, by the clerk
        return _plan(("s2", "refund order 7", "clerk"))
    if request.role == "worker":
        if any(isinstance(p, ToolResultPart) for m in request.messages for p in m.parts):
            return "refunded"
        call = ToolCallPart(id="r1", name="refund", arguments={"order": "7"})
        return ModelResponse(parts=(call,), stop_reason="tool_use", model="scripted")
    return "done"


def _refused(request: ModelRequest) -> str:
    raise ModelRefused("refused", usage=REFUSAL, model_calls=REFUSAL_CALLS)


def drafter() -> Worker:
    """The drafter whose model refuses, as a Ray replica builds it (``on_ray``)."""
    return Worker(name="drafter", description="drafts", model=ScriptedModel(_refused, price=PRICE))


def make_team(
    asked: list[str], *, hang: bool = False, approval: bool = True, on_ray: bool = False
) -> Team:
    """The team; ``asked``: the role of each request a model got (``drafter`` for the
    refusing model's, unless ``on_ray``: the drafter runs on a Ray replica)."""

    @tool(requires_approval=approval and not hang)
    async def refund(order: str) -> str:
        """Refund an order."""
        if hang:
            print("in tool", flush=True)
            await anyio.sleep_forever()
        return f"refunded {order}"

    def refusing(request: ModelRequest) -> str:
        asked.append("drafter")
        raise ModelRefused("refused", usage=REFUSAL, model_calls=REFUSAL_CALLS)

    def replying(request: ModelRequest) -> str | ModelResponse:
        asked.append(str(request.role))
        return _reply(request)

    model = ScriptedModel(replying, price=PRICE)
    drafting = Worker(
        name="drafter", description="drafts", model=ScriptedModel(refusing, price=PRICE)
    )
    if on_ray:
        drafting = dataclasses.replace(drafter(), placement=Ray(build=drafter, num_cpus=0))
    return Team(
        name="shop",
        planner=Planner(model=model),
        workers=[
            drafting,
            Worker(name="clerk", description="refunds", model=model, tools=[refund]),
        ],
        budget=Budget(usd=1.0),
    )


async def child(journal: str) -> None:
    team = make_team([], hang=True)
    async with team.start(journal=journal) as running, running.stream(GOAL) as events:
        async for event in events:
            if isinstance(event, RunStarted):
                print("run", event.run_id, flush=True)
    print("finished", flush=True)  # the tool never lets it


if __name__ == "__main__":
    anyio.run(child, sys.argv[1], backend=sys.argv[2])
