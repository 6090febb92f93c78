"""What a run reports it spent is what its steps spent, nested teams' steps included,
however its budget ends it (a team-worker step cancelled as its child run starts too)."""

from __future__ import annotations

import json
import random

import anyio
import anyio.lowlevel
import pytest

from regiment.hierarchy import Budget, Planner, Team, TeamWorker, Worker
from regiment.models import ModelRequest, ModelResponse, ScriptedModel, text_response
from regiment.models import tool_call_response as call
from regiment.tools import tool

pytestmark = pytest.mark.anyio

# Seeds of random fan-outs; with them, a step given to the nested team was dispatched
# and then cancelled (the parent's budget ran out) just as its child run started.
SEEDS = range(150, 170)


def _team(rnd: random.Random, ran: list[int]) -> Team:
    steps, calls = rnd.randint(2, 6), rnd.randint(1, 3)

    @tool
    async def act(n: int) -> str:
        """Act once."""
        ran.append(n)
        await anyio.lowlevel.checkpoint()
        return f"ok {n}"

    def brain(request: ModelRequest, names: tuple[str, ...] = ("w", "sub")) -> ModelResponse:
        if request.role in ("planner", "replanner"):
            plan = [
                {"id": f"s{i}", "description": f"do {i}", "worker": rnd.choice(names)}
                for i in range(steps)
            ]
            return text_response(json.dumps({"steps": plan}))
        if request.role == "worker":
            made = sum(
                1
                for m in request.messages
                if m.role == "user" and any(getattr(p, "call_id", None) for p in m.parts)
            )
            if made < calls:
                return call("act", {"n": made})
            return text_response("done " + "x" * rnd.randint(0, 400))
        return text_response("final")

    def child_brain(request: ModelRequest) -> ModelResponse:
        return brain(request, ("w",))

    child = Team(
        name="sub",
        planner=Planner(model=ScriptedModel(child_brain)),
        workers=[
            Worker(name="w", description="acts", model=ScriptedModel(child_brain), tools=[act])
        ],
    )
    tool_calls, model_calls = rnd.randint(1, 8), rnd.randint(5, 40)
    tokens = rnd.choice([None, rnd.randint(2000, 20000)])
    return Team(
        name="t",
        planner=Planner(model=ScriptedModel(brain)),
        workers=[
            Worker(name="w", description="acts", model=ScriptedModel(brain), tools=[act]),
            TeamWorker(name="sub", description="a team", team=child),
        ],
        budget=Budget(tool_calls=tool_calls, model_calls=model_calls, tokens=tokens),
        concurrency=rnd.randint(1, 6),
    )


async def test_a_runs_tool_calls_are_every_tool_call_its_steps_and_nested_teams_made() -> None:
    for seed in SEEDS:
        ran: list[int] = []
        team = _team(random.Random(seed), ran)
        with anyio.fail_after(20):
            result = await team.run("goal")
        assert result.tool_calls == len(ran), f"seed {seed}: {result.budget_exhausted}"
        assert result.tool_calls <= (team.budget.tool_calls or 0)
