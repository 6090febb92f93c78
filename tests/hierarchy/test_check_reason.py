"""A failed check with no ``explain`` says its description was not met.

Its reason used to be the description as it was: a check "the order is eligible for a
refund" that failed read ``step s1 failed its check 'eligible': the order is eligible for
a refund``, in the replan's request, the error and the events, as if the check had found
the order eligible. A replanning model that takes that at its word refunds the order.
"""

from __future__ import annotations

import pytest

from regiment.errors import StepFailed
from regiment.hierarchy import Budget, Check, Planner, StepReport, Team, Worker
from regiment.hierarchy.events import CheckFailed
from regiment.models import ScriptedModel, TextPart
from tests.hierarchy.brains import Brain, plan_json

pytestmark = pytest.mark.anyio

ELIGIBLE = "the order is eligible for a refund"
NOT_MET = f"not met: {ELIGIBLE}"


def _never(report: object) -> bool:
    return False


async def test_the_reason_of_a_check_without_explain_says_it_was_not_met() -> None:
    checked = plan_json({"id": "s1", "description": "check order 9", "check": "eligible"})
    brain = Brain([checked, plan_json({"id": "s2", "description": "tell the customer"})])
    model = ScriptedModel(brain)
    team = Team(
        name="t",
        planner=Planner(model=model),
        workers=[Worker(name="w", description="works", model=model)],
        checks={"eligible": Check(description=ELIGIBLE, predicate=_never)},
    )
    result = await team.run("refund order 9 if eligible")
    (failed,) = [e for e in result.events if isinstance(e, CheckFailed)]
    assert failed.reason == NOT_MET
    replan = "\n".join(
        p.text for m in brain.plan_requests[1].messages for p in m.parts if isinstance(p, TextPart)
    )
    assert f"step s1 failed its check 'eligible': {NOT_MET}" in replan


async def test_the_error_of_a_run_with_no_replans_left_says_it_was_not_met() -> None:
    checked = plan_json({"id": "s1", "description": "check order 9", "check": "eligible"})
    model = ScriptedModel(Brain([checked]))
    team = Team(
        name="t",
        planner=Planner(model=model),
        workers=[Worker(name="w", description="works", model=model)],
        checks={"eligible": Check(description=ELIGIBLE, predicate=_never)},
        budget=Budget(replans=0),
    )
    with pytest.raises(StepFailed) as caught:
        await team.run("refund order 9 if eligible")
    assert f"failed its check 'eligible': {NOT_MET};" in str(caught.value)


def test_an_explain_that_raised_still_says_what_was_not_met() -> None:
    def explain(report: StepReport) -> str:
        raise KeyError("total")

    check = Check(description=ELIGIBLE, predicate=_never, explain=explain)
    report = StepReport(
        run_id="r", plan_version=1, step_id="s1", attempt=1, worker="w", status="done", output="no"
    )
    outcome = check.run(report)
    assert outcome.reason == f"{NOT_MET} (explain failed: KeyError: 'total')"
