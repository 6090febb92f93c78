"""A Ray-placed worker whose one step outgrows its budget share: its ``probe`` tool is
called once per model reply, as often as the step's text says ("loop 5 times"), and
its first call waits in the probe actor until the test lets it go (once the short
sibling step has reported, so the run has something to top the long step up with).

Importable on the Ray node as ``tests.ray._ray_top_up`` (the session fixture puts the
repository on the replicas' ``PYTHONPATH``)."""

from __future__ import annotations

import dataclasses
import functools
import os

import anyio
import msgspec

from regiment.hierarchy import Budget, Planner, Ray, Team, Worker
from regiment.models import (
    ModelRequest,
    ModelResponse,
    Price,
    ScriptedModel,
    ToolResultPart,
    Usage,
    effective_settings,
    text_response,
)
from regiment.models import tool_call_response as call
from regiment.tools import tool

from ._ray_team import _probe, plan_text

__all__ = ("ANSWERED", "LOOPED", "top_up_team")

LOOPED = Usage(input_tokens=1, output_tokens=100)  # what each of the long step's replies spends
ANSWERED = Usage(input_tokens=1, output_tokens=10)  # each other reply (plan, answers, synthesis)


def _looper_brain(request: ModelRequest) -> ModelResponse:
    """Call ``probe`` once a reply until the step's count is reached, then answer."""
    text = str(getattr(request.messages[0].parts[0], "text", ""))
    want = int(text.split("loop ", 1)[1].split(" ", 1)[0])
    seen = sum(isinstance(p, ToolResultPart) for m in request.messages for p in m.parts)
    reply = call("probe", {"n": seen}) if seen < want else text_response(f"looped {seen} times")
    return msgspec.structs.replace(reply, usage=LOOPED)


def _held_looper_brain(request: ModelRequest) -> ModelResponse:
    """``_looper_brain``, its reply cut at the call's ``max_tokens`` when that is lower
    (a budget held it), as every provider's API keeps to it."""
    reply = _looper_brain(request)
    limit = effective_settings(None, request).max_tokens or request.max_tokens
    if limit >= LOOPED.output_tokens:
        return reply
    return msgspec.structs.replace(
        reply, usage=Usage(input_tokens=1, output_tokens=limit), stop_reason="max_tokens"
    )


def _answer(request: ModelRequest) -> ModelResponse:
    return msgspec.structs.replace(text_response("done"), usage=ANSWERED)


def looper(probe: str, hang_at: int = -1, price: Price | None = None, held: bool = False) -> Worker:
    """``hang_at``: the first body of that call tells the probe it started (with its
    process id, for the test to kill the replica) and never returns. ``price``: its
    model's; ``held``: its replies keep to ``max_tokens`` (``_held_looper_brain``)."""

    @tool(name="probe", idempotency_key=("n",))
    async def probe_call(n: int) -> int:
        """Probe once (the first call waits until the test lets it go)."""
        actor = _probe(probe)
        asked = await actor.effect.remote(f"probe:{n}")  # counts the bodies that ran, by call
        if n == 0:
            await actor.call.remote(os.getpid())
        if n == hang_at and asked == 1:
            await actor.start.remote(os.getpid())
            await anyio.sleep_forever()
        return n

    return Worker(
        name="looper",
        description="Loops.",
        model=ScriptedModel(_held_looper_brain if held else _looper_brain, price=price),
        tools=[probe_call],
        max_iterations=10,
    )


def top_up_team(
    probe: str,
    budget: Budget,
    loops: int,
    shorts: int = 1,
    hang_at: int = -1,
    replicas: int = 1,
    price: Price | None = None,
    held: bool = False,
) -> Team:
    """``looper`` on Ray (step s1, ``loops`` tool calls) beside ``shorts`` in-process
    steps (s2, s3, ...) that answer at once. ``price``: every model's in the team's
    process; the replicas build the looper's model without one (it is charged at the
    price the team's process has). ``held``: the looper's replies keep to ``max_tokens``."""
    build = functools.partial(looper, probe, hang_at, held=held)
    placement = Ray(build=build, num_cpus=0, replicas=replicas)
    placed = dataclasses.replace(looper(probe, hang_at, price, held), placement=placement)
    short = Worker(name="short", description="Answers.", model=ScriptedModel(_answer, price=price))
    plan = plan_text(
        {"id": "s1", "description": f"loop {loops} times", "worker": "looper"},
        *(
            {"id": f"s{i}", "description": "answer at once", "worker": "short"}
            for i in range(2, shorts + 2)
        ),
    )

    def planner(request: ModelRequest) -> ModelResponse:
        reply = text_response("the answer" if request.role == "synthesizer" else plan)
        return msgspec.structs.replace(reply, usage=ANSWERED)

    return Team(
        name="topping",
        planner=Planner(model=ScriptedModel(planner, price=price)),
        workers=[placed, short],
        budget=budget,
    )
