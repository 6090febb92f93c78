"""A team whose every model reply says what it used, and which records each reply its
stand-in models answered, for tests that a resumed run counts each reply its journal
holds as paid exactly once, whether it replays it or never gets to it.

Plan version 1 has step ``s1`` (worker ``clerk``): its first reply calls ``refund``,
which needs an approval (the run pauses there); its tool body says so on ``in_tool``
and, if ``hang``, waits to be cut; its second reply answers. With ``race``, plan 1 has
``s0`` (``drafter``) beside it, whose model waits for ``s1``'s first reply and then
refuses (``ModelRefused`` with usage): the replan's version 2 has ``s1`` again, and
version 1's ``s1`` (its paid reply journaled) is cut by the replan. The synthesizer
waits to be cut if ``hang_synthesis``. With ``nested``, ``s1`` goes to ``desk``, a
``TeamWorker`` whose team (its own planner, the same ``clerk``) plans it as ``s1`` too.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

import anyio

from regiment import Budget, Planner, Price, ScriptedModel, Team, TeamWorker, Worker, tool
from regiment.errors import ModelRefused
from regiment.models import (
    ModelRequest,
    ModelResponse,
    ToolCallPart,
    ToolResultPart,
    Usage,
    text_response,
)

GOAL = "refund order 7"
PRICE = Price(input=1.0, output=1.0)  # a micro-dollar a token
REFUSAL = Usage(input_tokens=9, output_tokens=2, micro_usd=11)
# What each role's reply says it used (input, output): a different size each, so a
# reply counted twice, or not at all, shows in the totals.
USED = {
    "planner": (100, 20),
    "replanner": (300, 30),
    "worker": (1000, 10),
    "synthesizer": (50, 5),
}


@dataclass
class Answered:
    """What the stand-in models answered, in order: (role, usage, model calls)."""

    replies: list[tuple[str, Usage, int]] = field(default_factory=list)
    in_tool: anyio.Event = field(default_factory=anyio.Event)
    clerk_replied: anyio.Event = field(default_factory=anyio.Event)
    tool_calls: int = 0  # the tool calls the paused run counted

    @property
    def model_calls(self) -> int:
        return sum(calls for _, _, calls in self.replies)

    @property
    def usage(self) -> Usage:
        return sum((usage for _, usage, _ in self.replies), Usage())


def _plan(*steps: tuple[str, str, str]) -> str:
    return json.dumps({"steps": [{"id": i, "description": d, "worker": w} for i, d, w in steps]})


def used(role: str) -> Usage:
    inputs, outputs = USED[role]
    return Usage(input_tokens=inputs, output_tokens=outputs, micro_usd=inputs + outputs)


def make_team(
    answered: Answered,
    *,
    race: bool = False,
    hang: bool = False,
    hang_synthesis: bool = False,
    budget: Budget | None = None,
    nested: bool = False,
) -> Team:
    """The team (see the module's docstring); ``budget``: else ``Budget(usd=1.0)``."""

    @tool(requires_approval=True)
    async def refund(order: str) -> str:
        """Refund an order."""
        answered.in_tool.set()
        if hang:
            await anyio.sleep_forever()
        return f"refunded {order}"

    async def brain(request: ModelRequest) -> ModelResponse:
        role = str(request.role)
        if role == "synthesizer" and hang_synthesis:
            await anyio.sleep_forever()
        if role == "planner":
            steps = [("s1", "refund order 7", "clerk")]
            text = _plan(*([("s0", "draft", "drafter")] if race else []), *steps)
        elif role == "replanner":
            text = _plan(("s1", "refund order 7", "clerk"))
        elif role == "worker" and not _has_result(request):
            answered.replies.append((role, used(role), 1))
            answered.clerk_replied.set()
            call = ToolCallPart(id="r1", name="refund", arguments={"order": "7"})
            return ModelResponse(
                parts=(call,), stop_reason="tool_use", model="scripted", usage=used(role)
            )
        else:
            text = "refunded" if role == "worker" else "done"
        answered.replies.append((role, used(role), 1))
        return text_response(text, usage=used(role))

    async def refusing(request: ModelRequest) -> str:
        await answered.clerk_replied.wait()
        answered.replies.append(("drafter", REFUSAL, 2))
        raise ModelRefused("refused", usage=REFUSAL, model_calls=2)

    model = ScriptedModel(brain, price=PRICE)
    workers: list[Worker | TeamWorker] = [
        Worker(name="clerk", description="refunds", model=model, tools=[refund])
    ]
    if nested:  # the clerk in a team of its own, under one planning "desk"'s steps
        desk = Team(name="desk", planner=Planner(model=model), workers=workers)
        workers = [TeamWorker(name="desk", description="refunds", team=desk)]
        model = ScriptedModel(_desk_planner(answered), price=PRICE)
    if race:
        drafting = ScriptedModel(refusing, price=PRICE)
        workers.append(Worker(name="drafter", description="drafts", model=drafting))
    return Team(
        name="paid",
        planner=Planner(model=model),
        workers=workers,
        budget=Budget(usd=1.0) if budget is None else budget,
    )


def _desk_planner(answered: Answered) -> Callable[[ModelRequest], Awaitable[ModelResponse]]:
    """The planner and synthesizer above a nested ``desk`` (its replies: ``top ...``)."""

    async def brain(request: ModelRequest) -> ModelResponse:
        role = str(request.role)
        text = _plan(("s1", "refund order 7", "desk")) if role == "planner" else "done"
        answered.replies.append((f"top {role}", used(role), 1))
        return text_response(text, usage=used(role))

    return brain


def _has_result(request: ModelRequest) -> bool:
    return any(isinstance(p, ToolResultPart) for m in request.messages for p in m.parts)
