"""The line that tells a model what a step its check rejected is, kept whatever the
``Prompts`` override: a replan's ``"list it again only to run it again"`` was written
inside the default ``replan_request`` / ``round_request`` (an override of them lost it,
and had no way to place it), and the synthesis request had no line at all (its model
read a rejected step's output, marked, with nothing saying what the mark meant). Now
``Prompts.rejected_replan`` and ``Prompts.rejected_answer`` hold the lines, the default
requests place them, and a request of an override that leaves its line out gets it
appended; ``""`` says none."""

from __future__ import annotations

import dataclasses

import pytest

from regiment.hierarchy import Planner, Prompts, Team
from regiment.hierarchy.plan import Plan
from regiment.models import ModelRequest, TextPart

from .brains import Brain, plan_json
from .replan_team import PROBE, RECOVER, replan_team

pytestmark = pytest.mark.anyio

ANSWER_LINE = Prompts().rejected_answer
REPLAN_LINE = Prompts().rejected_replan


class OwnWords(Prompts):
    """Requests of its own, none of them placing a rejected line."""

    def synthesis_request(self, *, goal: str, committed: str, artifacts: object) -> str:
        return f"GOAL {goal}\nRESULTS\n{committed}"

    def replan_request(self, *, goal: str, plan: Plan, committed: str, **_: object) -> str:
        return f"REPLAN {goal}\nKEPT\n{committed}"


class PlacesIt(Prompts):
    """A synthesis request that places the line itself, first."""

    def synthesis_request(self, *, goal: str, committed: str, artifacts: object) -> str:
        return f"{self.rejected_answer}\nGOAL {goal}\nRESULTS\n{committed}"


def _text(request: ModelRequest) -> str:
    return "\n".join(p.text for m in request.messages for p in m.parts if isinstance(p, TextPart))


def _with(prompts: Prompts, brain: Brain) -> Team:
    team = replan_team(brain)
    return dataclasses.replace(team, planner=Planner(model=team.planner.model, prompts=prompts))


async def _requests(prompts: Prompts) -> tuple[str, str]:
    """The replan's and the synthesis's request texts of a run whose probe was rejected."""
    brain = Brain([plan_json(PROBE), RECOVER])
    result = await _with(prompts, brain).run("refund order 7")
    assert result.rejected == ("s1",)
    assert "[rejected by its check 'fails'" in _text(brain.synthesis_requests[-1])
    return _text(brain.plan_requests[-1]), _text(brain.synthesis_requests[-1])


@pytest.mark.parametrize(
    "prompts",
    [Prompts(), Prompts(synthesizer="Answer in one line."), OwnWords()],
    ids=["default", "string", "methods"],
)
async def test_each_request_after_a_rejection_has_its_line_once(prompts: Prompts) -> None:
    replan, synthesis = await _requests(prompts)
    assert replan.count(REPLAN_LINE) == 1
    assert synthesis.count(ANSWER_LINE) == 1
    if isinstance(prompts, OwnWords):  # the override's own words, the line after them
        assert synthesis.startswith("GOAL refund order 7")
        assert synthesis.endswith(f"\n\n{ANSWER_LINE}")


async def test_an_override_that_places_the_line_gets_it_where_it_put_it() -> None:
    _, synthesis = await _requests(PlacesIt())
    assert synthesis.startswith(f"{ANSWER_LINE}\nGOAL")
    assert synthesis.count(ANSWER_LINE) == 1


async def test_lines_of_their_own_and_none() -> None:
    mine = Prompts(rejected_answer="Steps marked rejected are not facts.", rejected_replan="")
    replan, synthesis = await _requests(mine)
    assert REPLAN_LINE not in replan
    assert "Steps marked rejected are not facts." in synthesis
    assert ANSWER_LINE not in synthesis


async def test_no_rejection_no_line() -> None:
    brain = Brain([plan_json({"description": "refund order 7"})])
    result = await _with(OwnWords(), brain).run("refund order 7")
    assert result.rejected == ()
    assert ANSWER_LINE not in _text(brain.synthesis_requests[-1])


def test_the_default_synthesis_request_places_the_line_before_the_artefacts() -> None:
    committed = "- s1 (probe) [rejected by its check 'fails': no]: 42"
    text = Prompts().synthesis_request(goal="g", committed=committed, artifacts=["a"])
    assert text.index(ANSWER_LINE) < text.index("1 finished artefact will be appended")
