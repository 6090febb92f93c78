"""A Ray clerk whose reply asking for a refund (which needs an approval: the run pauses
there) is judged by two reply guards: the first asks a scripted judge on the replica,
the second, given ``base_url``, asks Claude on the test's stand-in Messages API, which
holds the call until the run's cancel cuts the chain (``test_ray_judge_replay_cut``);
built on the replicas from :func:`clerk`, by this module's name."""

from __future__ import annotations

import json

from regiment import Worker, tool
from regiment.hierarchy.guard import Outcome, Pass, ReplySubject, judge
from regiment.models import (
    Message,
    ModelRequest,
    ModelResponse,
    ScriptedModel,
    ToolCallPart,
    ToolResultPart,
)

from ..hierarchy.cut_run import PRICE
from ..hierarchy.held_call import held_model

__all__ = ("brain", "clerk")


def brain(request: ModelRequest) -> str | ModelResponse:
    """One step for the clerk; its reply asks for the refund, then says it is done."""
    if request.role == "planner":
        return json.dumps({"steps": [{"id": "s1", "description": "refund", "worker": "clerk"}]})
    if any(isinstance(p, ToolResultPart) for m in request.messages for p in m.parts):
        return "refunded"
    call = ToolCallPart(id="r1", name="refund", arguments={"order": "7"})
    return ModelResponse(parts=(call,), stop_reason="tool_use", model="scripted")


@tool(requires_approval=True)
async def refund(order: str) -> str:
    """Refund an order."""
    return f"refunded {order}"


def clerk(base_url: str | None = None) -> Worker:
    """The clerk: without ``base_url`` its second guard passes at once (the second's
    model is built in its check: a model client cannot be pickled)."""
    quick = ScriptedModel(lambda request: "fine", price=PRICE)

    async def first(subject: ReplySubject) -> Outcome:
        await judge(quick, ModelRequest(messages=(Message.user("is this fine?"),)))
        return Pass()

    async def second(subject: ReplySubject) -> Outcome:
        if base_url is not None:
            await judge(held_model(base_url), ModelRequest(messages=(Message.user("and?"),)))
        return Pass()

    model = ScriptedModel(brain, price=PRICE)
    return Worker(
        name="clerk", description="refunds", model=model, tools=[refund], guardrails=[first, second]
    )
