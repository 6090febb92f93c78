"""Guardrails in team files: ``guardrails = ["module:attribute"]`` on the team, the
planner (and its synthesizer), the critic, each worker and each worker's tools."""

from __future__ import annotations

from pathlib import Path

import pytest

from regiment.config import load_team
from regiment.errors import ConfigError
from regiment.hierarchy import Guardrail
from regiment.hierarchy.run._guarding import role_guards

GUARDS = """
from regiment.hierarchy.guard import (
    AnswerSubject, Outcome, Pass, PlanSubject, RequestSubject, ToolCallSubject, ToolResultSubject,
    guardrail, max_length,
)

def team_guard(subject: RequestSubject) -> Outcome:
    return Pass()

def plan_guard(subject: PlanSubject) -> Outcome:
    return Pass()

def answer_guard(subject: AnswerSubject) -> Outcome:
    return Pass()

@guardrail("model_reply", on_trip="tell_model")
def critic_guard(subject: object) -> Outcome:
    return Pass()

def worker_guard(subject: ToolCallSubject) -> Outcome:
    return Pass()

def tool_guard(subject: ToolResultSubject) -> Outcome:
    return Pass()

short = max_length(100, "answer", name="short")

def vague(subject):
    return Pass()
"""

TEAM = """
name = "t"
brain = "examples.refund.brain:refund_brain"
guardrails = ["file_guards:team_guard"]

[planner]
guardrails = ["file_guards:plan_guard"]
synthesizer_guardrails = ["file_guards:answer_guard", "file_guards:short"]

[critic]
guardrails = ["file_guards:critic_guard"]

[[workers]]
name = "billing"
description = "refunds"
tools = ["examples.refund.tools:issue_refund"]
guardrails = ["file_guards:worker_guard"]
tool_guardrails = { issue_refund = ["file_guards:tool_guard"] }
"""


def names(guards: tuple[Guardrail, ...] | object) -> list[tuple[str, str]]:
    assert isinstance(guards, tuple)
    return [(g.name, g.kind) for g in guards]


@pytest.fixture
def files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "file_guards.py").write_text(GUARDS)
    monkeypatch.syspath_prepend(str(tmp_path))
    return tmp_path


def test_guardrails_at_every_level_of_a_team_file(files: Path) -> None:
    path = files / "team.toml"
    path.write_text(TEAM)
    team = load_team(path)
    assert names(team.guardrails) == [("team_guard", "model_request")]
    assert names(team.planner.guardrails) == [("plan_guard", "plan")]
    assert names(team.planner.synthesizer_guardrails) == [
        ("answer_guard", "answer"),
        ("short", "answer"),
    ]
    assert team.critic is not None
    (critic,) = team.critic.guardrails
    assert isinstance(critic, Guardrail)
    assert (critic.name, critic.kind, critic.on_trip) == (
        "critic_guard",
        "model_reply",
        "tell_model",
    )
    worker = team.workers[0]
    assert names(worker.guardrails) == [("worker_guard", "tool_call")]  # type: ignore[union-attr]
    assert names(worker.tool_guardrails["issue_refund"]) == [("tool_guard", "tool_result")]  # type: ignore[union-attr]
    roles = role_guards(team.guardrails, team.planner, team.critic)
    assert [g.name for g in roles.plan] == ["plan_guard"]
    assert [g.name for g in roles.of("critic", "model_request")] == ["team_guard"]


def test_a_bad_guardrail_path_names_the_file_and_key(files: Path) -> None:
    path = files / "team.toml"
    path.write_text(TEAM.replace('"file_guards:worker_guard"', '"file_guards:vague"'))
    with pytest.raises(ConfigError) as caught:
        load_team(path)
    message = str(caught.value)
    assert f"{path}: workers[0].guardrails[0]: 'file_guards:vague'" in message
    assert "cannot tell which subject it checks" in message
    path.write_text(TEAM.replace('"file_guards:plan_guard"', '"file_guards:missing"'))
    with pytest.raises(ConfigError, match=r"planner\.guardrails\[0\]: cannot import"):
        load_team(path)


def test_a_misspelt_guardrail_path_lists_the_guardrails_the_module_has(files: Path) -> None:
    # `short` and `critic_guard` are Guardrail objects (a built-in, a decorated function),
    # no functions: the list said only the plain functions were there.
    path = files / "team.toml"
    path.write_text(TEAM.replace('"file_guards:short"', '"file_guards:shrot"'))
    with pytest.raises(ConfigError) as caught:
        load_team(path)
    assert str(caught.value).endswith(
        "no attribute 'shrot' (it has: answer_guard, critic_guard, plan_guard, short, "
        "team_guard, tool_guard, vague, worker_guard)"
    )


def test_a_built_in_named_without_its_call_says_to_call_it(files: Path) -> None:
    # "regiment.hierarchy.guard:redact_pii" (or Team(guardrails=[redact_pii])) names the
    # factory, not a guard: it was refused with "annotate its parameter with one of ...",
    # advice that fits a function of one's own, not a built-in that only needs calling.
    path = files / "team.toml"
    path.write_text(
        TEAM.replace('"file_guards:team_guard"', '"regiment.hierarchy.guard:redact_pii"')
    )
    with pytest.raises(ConfigError) as caught:
        load_team(path)
    message = str(caught.value)
    assert f"{path}: guardrails[0]: 'regiment.hierarchy.guard:redact_pii'" in message
    assert "'redact_pii' makes a guardrail rather than being one: call it" in message
    assert "pii = redact_pii(...) in myapp/guards.py" in message
    assert "annotate its parameter" not in message


def test_a_misplaced_guard_in_a_file_is_told_where_the_file_puts_it(files: Path) -> None:
    # An answer guard in a [[workers]] entry never runs: the error said to put it on
    # "Team(guardrails=...) or Planner(synthesizer_guardrails=...)", constructors the
    # file's author never writes.
    path = files / "team.toml"
    path.write_text(TEAM.replace('"file_guards:worker_guard"', '"file_guards:answer_guard"'))
    with pytest.raises(ConfigError) as caught:
        load_team(path)
    message = str(caught.value)
    assert message.startswith(f"{path}: workers[0]: worker 'billing': guardrail 'answer_guard'")
    assert message.endswith(
        "; in a team file: `guardrails` at the top or `synthesizer_guardrails` under `[planner]`"
    )
