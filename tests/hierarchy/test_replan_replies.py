"""What a replan's reply may say about the steps it keeps, and what later steps and
the answer are told about a step its check rejected."""

from __future__ import annotations

import pytest

from regiment.hierarchy import Replanned
from regiment.models import ModelRequest, TextPart

from .brains import Brain, plan_json
from .replan_team import PROBE, RECOVER, replan_team

pytestmark = pytest.mark.anyio

_WHOLE_PLAN = plan_json(PROBE, {"id": "s2", "description": "more", "depends_on": ["s1"]})
# A step that holds, then the probe its check rejects: a replan keeps both.
_HELD_FIRST = plan_json(
    {"id": "s1", "description": "first"},
    {"id": "s2", "description": "probe", "check": "fails", "depends_on": ["s1"]},
)
_MORE = {"id": "s3", "description": "more", "depends_on": ["s1"]}


@pytest.mark.parametrize(
    "reply",
    [
        plan_json({"id": "s1", "description": "first"}, _MORE),  # the kept step with it
        plan_json(_MORE, {"id": "s1", "description": "  First "}),  # reordered, other spacing
    ],
)
async def test_a_replan_that_restates_the_kept_steps_runs_its_new_steps(reply: str) -> None:
    brain = Brain([_HELD_FIRST, reply])
    result = await replan_team(brain).run("goal")
    assert result.status == "completed"
    assert len(brain.plan_requests) == 2  # the replan was read, not sent back
    assert [[s.id for s in plan.steps] for plan in result.plans] == [
        ["s1", "s2"],
        ["s1", "s2", "s3"],
    ]
    assert result.plans[1].step("s1").description == "first"  # the kept step, as it was
    (replanned,) = [e for e in result.events if isinstance(e, Replanned)]
    assert replanned.kept == ("s1", "s2")  # s2 as the evidence its check rejected
    assert [s.id for s in replanned.added] == ["s3"]
    assert result.committed == ("s1", "s3")
    assert result.rejected == ("s2",)


async def test_a_replan_that_gives_a_kept_id_to_other_work_is_sent_back() -> None:
    taken = plan_json({"id": "s1", "description": "something else"})
    again = plan_json({"id": "s3", "description": "something else"})
    brain = Brain([_HELD_FIRST, taken, again])
    result = await replan_team(brain).run("goal")
    assert len(brain.plan_requests) == 3
    problem = brain.plan_requests[2].messages[-1].parts[0]
    assert "'s1' is already used by a completed step" in getattr(problem, "text", "")
    assert [s.id for s in result.plans[-1].steps] == ["s1", "s2", "s3"]


def _text(request: ModelRequest) -> str:
    return "\n".join(p.text for m in request.messages for p in m.parts if isinstance(p, TextPart))


async def test_a_rejected_step_is_told_as_rejected_to_later_steps_and_the_answer() -> None:
    brain = Brain([plan_json(PROBE), RECOVER])
    result = await replan_team(brain).run("goal")
    assert result.status == "completed"
    recover = next(r for r in brain.worker_requests if "Your step (s2)" in _text(r))
    assert "- s1: [rejected by its check 'fails': not met: never passes] did: probe" in _text(
        recover
    )
    (synthesis,) = brain.synthesis_requests
    assert (
        "- s1 (probe) [rejected by its check 'fails': not met: never passes]: did: probe"
        in _text(synthesis)
    )
    assert "- s2 (recover): did: recover" in _text(synthesis)


async def test_a_replan_that_builds_on_a_dropped_step_is_told_the_step_was_dropped() -> None:
    on_dropped = plan_json({"id": "s3", "description": "use more", "depends_on": ["s2"]})
    again = plan_json(
        {"id": "s2", "description": "more"},
        {"id": "s3", "description": "use more", "depends_on": ["s2"]},
    )
    brain = Brain([_WHOLE_PLAN, on_dropped, again])
    result = await replan_team(brain).run("goal")
    problem = _text(brain.plan_requests[2]).rsplit("That plan cannot be run:", 1)[1]
    assert "step s3 depends on step 's2' of the plan being replaced, which did not finish" in (
        problem
    )
    assert "give 's2' again as a step of your reply" in problem
    assert [s.id for s in result.plans[-1].steps] == ["s1", "s2", "s3"]
    assert result.committed == ("s2", "s3")
    assert result.rejected == ("s1",)
