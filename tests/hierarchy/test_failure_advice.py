"""A step that failed with no replan left says what to change to let the run go further.

It said "no replans left (budget allows 0)", not what to raise; a step cut by its
worker's ``step_timeout`` did not point at it. (``BudgetExceeded``'s own advice:
test_budget.py.)
"""

from __future__ import annotations

import pytest

from regiment.errors import StepFailed
from regiment.hierarchy import Budget, Planner, Team, Worker
from regiment.models import ScriptedModel

from .brains import Brain, Hang, plan_json

pytestmark = pytest.mark.anyio


async def test_a_step_past_its_timeout_with_no_replan_left_names_both_limits() -> None:
    model = ScriptedModel(Brain([plan_json({"description": "wait"})], work=Hang()))
    slow = Worker(name="slow", description="waits", model=model, step_timeout=0.2)
    team = Team(name="t", planner=Planner(model=model), workers=[slow], budget=Budget(replans=0))
    with pytest.raises(StepFailed) as caught:
        await team.run("wait")
    assert str(caught.value) == (
        "step s1 (wait) ended timed_out: step took longer than the worker's step_timeout of "
        "0.2s; no replans left (budget allows 0; Budget(replans=...) lets the planner try "
        "again, Worker(step_timeout=...) lets worker 'slow' take longer)"
    )
