"""A step its check rejected: kept as evidence, never listed as committed, and run
again when a replan lists it again."""

from __future__ import annotations

import dataclasses

import pytest

from regiment.errors import StepFailed
from regiment.hierarchy import (
    Budget,
    Check,
    CheckFailed,
    Pass,
    Planner,
    PlanSubject,
    Replanned,
    RunFailed,
    StepReport,
    Team,
    Worker,
)
from regiment.models import ModelRequest, ScriptedModel, TextPart

from .brains import Brain, plan_json
from .replan_team import PROBE, RECOVER, replan_team

pytestmark = pytest.mark.anyio


def _text(request: ModelRequest) -> str:
    return "\n".join(p.text for m in request.messages for p in m.parts if isinstance(p, TextPart))


async def test_a_rejected_step_is_reported_as_rejected_not_committed() -> None:
    brain = Brain([plan_json(PROBE), RECOVER])
    result = await replan_team(brain).run("goal")
    assert result.status == "completed"
    assert result.committed == ("s2",)
    assert result.rejected == ("s1",)
    assert [(r.step_id, r.status) for r in result.steps] == [("s1", "done"), ("s2", "done")]
    with pytest.raises(KeyError, match="'s1' was rejected by its check"):
        result.output_of("s1")
    assert result.output_of("s2") == "did: recover"
    (check,) = [e for e in result.events if isinstance(e, CheckFailed)]
    assert check.step_id == "s1"


async def test_a_run_that_fails_after_a_rejection_says_which_steps_were_rejected() -> None:
    team = dataclasses.replace(replan_team(Brain([plan_json(PROBE)])), budget=Budget(replans=0))
    with pytest.raises(StepFailed, match="no replans left") as raised:
        await team.run("goal")
    failed = raised.value.failed
    assert isinstance(failed, RunFailed)
    assert failed.committed == ()
    assert failed.rejected == ("s1",)


def _second_time_lucky(report: StepReport) -> bool:
    return report.plan_version > 1  # the probe holds when it runs again


def _lucky_team(brain: Brain) -> Team:
    model = ScriptedModel(brain)
    return Team(
        name="t",
        planner=Planner(model=model),
        workers=[Worker(name="w", description="does things", model=model)],
        checks={"lucky": Check(description="holds the second time", predicate=_second_time_lucky)},
    )


_PROBE = {"id": "s1", "description": "probe", "check": "lucky"}
_USE = {"id": "s2", "description": "use the probe", "depends_on": ["s1"]}


@pytest.mark.parametrize(
    "again",
    [
        _PROBE,  # restated as it was
        {"id": "s1", "description": "probe once more, more carefully", "check": "lucky"},
    ],
)
async def test_a_replan_that_lists_a_rejected_step_again_runs_it_again(
    again: dict[str, object],
) -> None:
    brain = Brain([plan_json(_PROBE, _USE), plan_json(again, _USE)])
    result = await _lucky_team(brain).run("goal")
    assert result.status == "completed"
    probes = [r for r in result.steps if r.step_id == "s1"]
    assert [r.plan_version for r in probes] == [1, 2]  # rejected in v1, run again in v2
    assert result.committed == ("s1", "s2")
    assert result.rejected == ()
    (replanned,) = [e for e in result.events if isinstance(e, Replanned)]
    assert replanned.kept == ()
    assert [s.id for s in replanned.added] == ["s1", "s2"]
    assert [s.id for s in replanned.removed] == ["s2"]
    # the replan was told how to run it again; s2 waited for the new result, unmarked
    assert "list it again (its id) only to run it again" in _text(brain.plan_requests[1])
    (use,) = [r for r in brain.worker_requests if "Your step (s2)" in _text(r)]
    assert "rejected" not in _text(use)
    assert f"- s1: did: {again['description']}" in _text(use)


async def test_a_partial_answer_tells_a_rejected_step_as_rejected() -> None:
    team = replan_team(Brain([plan_json(PROBE), RECOVER]))
    result = await dataclasses.replace(team, budget=Budget(model_calls=3)).run("goal")
    assert result.status == "partial"
    assert "s1: [rejected by its check 'fails': not met: never passes] did: probe" in result.answer


async def test_a_plan_guard_sees_a_rejected_step_run_again_as_a_new_step() -> None:
    seen: list[tuple[list[str], list[str]]] = []

    def judge(plan: PlanSubject) -> Pass:
        seen.append(([s.id for s in plan.steps], [s.id for s in plan.committed]))
        return Pass()

    brain = Brain([plan_json(_PROBE, _USE), plan_json(_PROBE, _USE)])
    team = _lucky_team(brain)
    guarded = dataclasses.replace(team.planner, guardrails=[judge])
    result = await dataclasses.replace(team, planner=guarded).run("goal")
    assert result.status == "completed"
    assert seen == [(["s1", "s2"], []), (["s1", "s2"], [])]  # v2: nothing kept but evidence
    assert result.committed == ("s1", "s2")
