"""A guard put where its kind of subject is never judged (an answer guard on a worker, a
plan guard on the critic) is a ``ConfigError`` naming it and where it goes: it was
accepted and never ran, so a team thought guarded was not."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from regiment.errors import ConfigError
from regiment.hierarchy import Critic, Planner, Trip, Worker
from regiment.hierarchy.guard import Guardrail, SubjectKind, guardrail
from regiment.models import ScriptedModel

from .brains import Brain

MODEL = ScriptedModel(Brain([]))


def _trips(kind: SubjectKind) -> Guardrail:
    return guardrail(kind, name=f"no_{kind}")(lambda subject: Trip("no"))


# Each in code, then as a team file writes it: a file's author edits no constructor.
PLAN = (
    "Team(guardrails=...) or Planner(guardrails=...); in a team file: `guardrails` at the top "
    "or under `[planner]`"
)
ANSWER = (
    "Team(guardrails=...) or Planner(synthesizer_guardrails=...); in a team file: `guardrails` "
    "at the top or `synthesizer_guardrails` under `[planner]`"
)
TOOLS = (
    "Team(guardrails=...), Worker(guardrails=...) or Worker(tool_guardrails=...); in a team "
    "file: `guardrails` at the top, or `guardrails` or `tool_guardrails` in a `[[workers]]` entry"
)
CALLS = (
    "Team, Planner, Critic or Worker (guardrails=...); in a team file: `guardrails` at the top, "
    "under `[planner]` or `[critic]`, or in a `[[workers]]` entry"
)


@pytest.mark.parametrize(
    ("build", "kind", "here", "place"),
    [
        (
            lambda g: Worker(name="w", description="d", model=MODEL, guardrails=[g]),
            "answer",
            "worker 'w': ",
            ANSWER,
        ),
        (
            lambda g: Worker(name="w", description="d", model=MODEL, guardrails=[g]),
            "plan",
            "worker 'w': ",
            PLAN,
        ),
        (lambda g: Planner(model=MODEL, guardrails=[g]), "answer", "planner: ", ANSWER),
        (lambda g: Planner(model=MODEL, guardrails=[g]), "tool_call", "planner: ", TOOLS),
        (
            lambda g: Planner(model=MODEL, synthesizer_guardrails=[g]),
            "plan",
            "synthesizer: ",
            PLAN,
        ),
        (lambda g: Critic(guardrails=[g]), "plan", "critic: ", PLAN),
        (lambda g: Critic(guardrails=[g]), "tool_result", "critic: ", TOOLS),
    ],
)
def test_a_guard_where_its_subject_never_comes_is_refused(
    build: Callable[[Guardrail], object], kind: SubjectKind, here: str, place: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        build(_trips(kind))
    message = str(caught.value)
    assert message.startswith(
        f"{here}guardrail 'no_{kind}' judges the {kind}, but no {kind} is judged here, so it "
        "would never run (here: "
    )
    assert message.endswith(f"); put it on {place}")


def test_a_per_tool_guard_judges_only_that_tools_calls_and_results() -> None:
    from regiment.tools import tool

    @tool
    def pay(amount: int) -> str:
        """Pay."""
        return "paid"

    with pytest.raises(ConfigError) as caught:
        Worker(
            name="w",
            description="d",
            model=MODEL,
            tools=[pay],
            tool_guardrails={"pay": [_trips("model_request")]},
        )
    assert str(caught.value) == (
        "worker 'w': tool_guardrails 'pay': guardrail 'no_model_request' judges the "
        "model_request, but no model_request is judged here, so it would never run (here: "
        f"tool_call, tool_result); put it on {CALLS}"
    )
