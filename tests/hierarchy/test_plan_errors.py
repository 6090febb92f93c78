"""Invalid plans go back to the planner with the exact problem, a bounded number of times."""

from __future__ import annotations

import pytest

from regiment.errors import PlanError
from regiment.hierarchy import Planner, Team, Worker
from regiment.models import ScriptedModel, TextPart

from .brains import Brain, plan_json
from .replan_team import PROBE, replan_team

pytestmark = pytest.mark.anyio


def _team(brain: Brain, attempts: int = 3) -> Team:
    model = ScriptedModel(brain)
    return Team(
        name="t",
        planner=Planner(model=model, max_plan_attempts=attempts),
        workers=[Worker(name=n, description=n, model=model) for n in ("billing", "comms")],
    )


async def test_unknown_worker_is_sent_back_then_fixed() -> None:
    bad = plan_json({"description": "ship it", "worker": "shipping"})
    good = plan_json({"description": "ship it", "worker": "billing"})
    brain = Brain([bad, good])
    result = await _team(brain).run("goal")
    assert result.committed == ("s1",)
    reprompt = brain.plan_requests[1].messages[-1]
    text = "".join(p.text for p in reprompt.parts if isinstance(p, TextPart))
    assert "'shipping'" in text
    assert "billing, comms" in text


async def test_cycle_three_times_fails_with_plan_error_carrying_the_reply() -> None:
    cyclic = plan_json(
        {"id": "a", "description": "x", "worker": "billing", "depends_on": ["b"]},
        {"id": "b", "description": "y", "worker": "billing", "depends_on": ["a"]},
    )
    brain = Brain([cyclic] * 3)
    with pytest.raises(PlanError) as info:
        await _team(brain).run("goal")
    assert info.value.last_reply == cyclic
    assert any("cycle" in p for p in info.value.problems)
    assert len(brain.plan_requests) == 3
    assert brain.worker_requests == []


async def test_blank_reply_is_sent_back_not_taken_as_nothing_to_do() -> None:
    brain = Brain(["   ", plan_json({"description": "x", "worker": "comms"})])
    result = await _team(brain).run("goal")
    assert result.committed == ("s1",)
    reprompt = brain.plan_requests[1].messages[-1]
    assert "held no steps" in "".join(p.text for p in reprompt.parts if isinstance(p, TextPart))


async def test_a_replan_that_never_parses_keeps_what_the_run_got_to_on_the_error() -> None:
    # run() raises; the rejected step, its report and the usage were lost with it.
    garbage = plan_json({"description": "undo", "depends_on": ["nowhere"]})
    brain = Brain([plan_json(PROBE), garbage, garbage, garbage])
    with pytest.raises(PlanError) as caught:
        await replan_team(brain).run("goal")
    failed = caught.value.failed
    assert failed is not None
    assert failed.error_type == "PlanError"
    assert failed.message == str(caught.value)
    assert failed.committed == ()
    assert failed.rejected == ("s1",)  # its check rejected it: kept as evidence
    assert [(r.step_id, r.status, r.output) for r in failed.steps] == [("s1", "done", "did: probe")]
    assert [p.version for p in failed.plans] == [1]
    assert failed.model_calls == 5  # the plan, the probe, three replies to the replan
