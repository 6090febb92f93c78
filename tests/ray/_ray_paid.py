"""A clerk whose step pays three model replies around two tools, for a test that a
resume whose Ray replica stops part-way through its step's replay still counts the
journaled replies the replica never reached.

Reply 1 calls ``note``; reply 2 calls ``refund``, which needs an approval (the run pauses
there: replies 1 and 2 journaled); reply 3 answers. Every reply reports its usage. The
clerk is built on its replica by ``clerk`` (``on_ray``), or in this process.
"""

from __future__ import annotations

import dataclasses
import json

from regiment import Budget, Planner, Ray, ScriptedModel, Team, Worker, tool
from regiment.models import (
    ModelRequest,
    ModelResponse,
    ToolCallPart,
    ToolResultPart,
    Usage,
    text_response,
)

from ..journal.paid_replies_team import PRICE


def _used(role: str, n: int) -> Usage:
    inputs = {"planner": 100, "synthesizer": 50}.get(role, 1000 * n)
    return Usage(input_tokens=inputs, output_tokens=n, micro_usd=inputs + n)


@tool
def note(text: str) -> str:
    """Take a note."""
    return f"noted {text}"


@tool(requires_approval=True)
def refund(order: str) -> str:
    """Refund an order."""
    return f"refunded {order}"


def _reply(request: ModelRequest) -> ModelResponse:
    role = str(request.role)
    if role == "planner":
        steps = [{"id": "s1", "description": "refund order 7", "worker": "clerk"}]
        return text_response(json.dumps({"steps": steps}), usage=_used(role, 1))
    if role != "worker":
        return text_response("done", usage=_used(role, 1))
    results = sum(isinstance(p, ToolResultPart) for m in request.messages for p in m.parts)
    n = results + 1
    if results == 0:
        call = ToolCallPart(id="n1", name="note", arguments={"text": "order 7"})
    elif results == 1:
        call = ToolCallPart(id="r1", name="refund", arguments={"order": "7"})
    else:
        return text_response("refunded", usage=_used(role, n))
    return ModelResponse(parts=(call,), stop_reason="tool_use", model="s", usage=_used(role, n))


def clerk() -> Worker:
    """The clerk, as its replica builds it."""
    model = ScriptedModel(_reply, price=PRICE)
    return Worker(name="clerk", description="refunds", model=model, tools=[note, refund])


def make_team(*, on_ray: bool, budget: Budget | None = None) -> Team:
    """The team; ``budget``: else ``Budget(usd=1.0)``."""
    worker = clerk()
    if on_ray:
        worker = dataclasses.replace(worker, placement=Ray(build=clerk, num_cpus=0))
    return Team(
        name="paid",
        planner=Planner(model=ScriptedModel(_reply, price=PRICE)),
        workers=[worker],
        budget=Budget(usd=1.0) if budget is None else budget,
    )
