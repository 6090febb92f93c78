"""A team whose guards' judge model refuses every question, reporting what the refusal
cost (``ModelRefused(usage=...)``), for tests that such a call is journaled as answered
(its intent closed): a resume, or the cancel of a stalled run, charges it once, at what
it reported, never again as a call in flight.

Step ``s1`` (worker ``drafter``) answers ``done``; its guard asks the judge and, refused,
lets the reply pass. Step ``s2`` (worker ``clerk``, the same guard) calls ``refund``, which
needs an approval (the run pauses there), or, in the child (``hang``), says ``in tool``
and waits to be killed.

Run as a script (``python refusing_judge_team.py JOURNAL BACKEND``) it is the child: it
prints ``run RUN_ID`` when the run starts.
"""

from __future__ import annotations

import json
import sys

import anyio

from regiment import Budget, Planner, Price, ScriptedModel, Team, Worker, tool
from regiment.errors import ModelRefused
from regiment.hierarchy import RunStarted
from regiment.hierarchy.guard import Outcome, Pass, PlanSubject, ReplySubject, judge
from regiment.models import (
    Message,
    ModelRequest,
    ModelResponse,
    ToolCallPart,
    ToolResultPart,
    Usage,
)

GOAL = "draft, then refund order 7"
PRICE = Price(input=1.0, output=1.0)
REFUSAL = Usage(input_tokens=9, output_tokens=2, micro_usd=11)  # what each refusal reports
REFUSAL_CALLS = 2  # the model calls each refusal says it took


def _plan() -> str:
    steps = [
        {"id": "s1", "description": "draft", "worker": "drafter"},
        {"id": "s2", "description": "refund order 7", "worker": "clerk", "depends_on": ["s1"]},
    ]
    return json.dumps({"steps": steps})


def _reply(request: ModelRequest) -> str | ModelResponse:
    if request.role == "planner":
        return _plan()
    said = "".join(m.text for m in request.messages)
    if request.role == "worker" and "refund" in said:
        if any(isinstance(p, ToolResultPart) for m in request.messages for p in m.parts):
            return "refunded"
        call = ToolCallPart(id="r1", name="refund", arguments={"order": "7"})
        return ModelResponse(parts=(call,), stop_reason="tool_use", model="scripted")
    return "done"


class Overloaded(ModelRefused):
    """A refusal of a class of the application's own (not one the journal names)."""


def make_team(
    asked: list[str],
    verdicts: list[str],
    *,
    hang: bool = False,
    plan_guard: bool = False,
    own_class: bool = False,
    budget: Budget | None = None,
) -> Team:
    """The team; ``asked``: a line per question the judge model got; ``verdicts``: what
    each judge call came to, as the guard saw it (the refusal's reported cost);
    ``plan_guard``: the plan has a guard too, asking the same judge; ``own_class``: the
    judge refuses with ``Overloaded``; ``budget``: else ``Budget(usd=1.0)``."""

    @tool(requires_approval=not hang)
    async def refund(order: str) -> str:
        """Refund an order."""
        if hang:
            print("in tool", flush=True)
            await anyio.sleep_forever()
        return f"refunded {order}"

    def refusing(request: ModelRequest) -> str:
        asked.append(request.messages[0].text)
        refusal = Overloaded if own_class else ModelRefused
        raise refusal("refused", usage=REFUSAL, model_calls=REFUSAL_CALLS)

    refuser = ScriptedModel(refusing, price=PRICE)

    async def asked_of(what: str) -> Outcome:
        try:
            await judge(refuser, ModelRequest(messages=(Message.user(f"fine? {what}"),)))
        except ModelRefused as exc:  # the guard lets what its judge would not judge pass
            verdicts.append(f"{what}: refused, {exc.model_calls} calls, {exc.usage}")
        else:
            verdicts.append(f"{what}: answered")
        return Pass()

    async def careful(subject: ReplySubject) -> Outcome:
        return await asked_of(str(subject.worker))

    async def planned(subject: PlanSubject) -> Outcome:
        return await asked_of("the plan")

    model = ScriptedModel(_reply, price=PRICE)
    drafting = ScriptedModel(lambda request: "done", price=PRICE)
    return Team(
        name="shop",
        planner=Planner(model=model),
        workers=[
            Worker(name="drafter", description="drafts", model=drafting, guardrails=[careful]),
            Worker(
                name="clerk",
                description="refunds",
                model=model,
                tools=[refund],
                guardrails=[careful],
            ),
        ],
        guardrails=[planned] if plan_guard else [],
        budget=Budget(usd=1.0) if budget is None else budget,
    )


async def child(journal: str) -> None:
    team = make_team([], [], hang=True)
    async with team.start(journal=journal) as running, running.stream(GOAL) as events:
        async for event in events:
            if isinstance(event, RunStarted):
                print("run", event.run_id, flush=True)
    print("finished", flush=True)  # the tool never lets it


if __name__ == "__main__":
    anyio.run(child, sys.argv[1], backend=sys.argv[2])
