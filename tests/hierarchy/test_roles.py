"""Every model call a team makes says who makes it: role, worker and step id."""

from __future__ import annotations

import json

import pytest

from regiment.hierarchy import Budget, Critic, Planner, Team, Worker
from regiment.models import ModelRequest, ScriptedModel

from .brains import plan_json

pytestmark = pytest.mark.anyio


async def test_requests_carry_the_role_worker_and_step_of_each_call() -> None:
    seen: list[tuple[str | None, str | None, str | None]] = []
    verdicts = iter([{"passed": False, "feedback": "add the tax"}, {"passed": True}])
    plans = iter(
        [
            plan_json({"description": "find the price", "worker": "pricing"}),
            plan_json({"description": "find the tax", "worker": "tax", "depends_on": ["s1"]}),
        ]
    )

    def brain(request: ModelRequest) -> str:  # dispatches on the role alone
        seen.append((request.role, request.worker, request.step_id))
        match request.role:
            case "planner" | "replanner":
                return next(plans)
            case "worker":
                return f"{request.worker} did {request.step_id}"
            case "critic":
                return json.dumps(next(verdicts))
            case "synthesizer":
                return "price with tax"
            case _:
                raise AssertionError(request.role)

    model = ScriptedModel(brain)
    team = Team(
        name="shop",
        planner=Planner(model=model),
        workers=[
            Worker(name="pricing", description="prices", model=model),
            Worker(name="tax", description="taxes", model=model),
        ],
        critic=Critic(),
        budget=Budget(rounds=2),
    )
    result = await team.run("price with tax")

    assert result.answer == "price with tax"
    assert seen == [
        ("planner", None, None),
        ("worker", "pricing", "s1"),
        ("critic", None, None),
        ("replanner", None, None),  # the second round plans the tail
        ("worker", "tax", "s2"),
        ("critic", None, None),
        ("synthesizer", None, None),
    ]
