"""The critic: after a plan's steps are committed, does the result meet the goal?

Its verdict is structured (passed or not, and concrete feedback). A reply that
does not parse is sent back once with the expected form; if the second reply
does not parse either, the verdict is *passed with a warning*. Why that rule:
the critic is an optional quality gate on work already paid for. Treating a
broken critic as "failed" would spend more rounds (and money) on its noise,
while the committed results are still valid; the warning is kept on the
verdict, in the events and on the result, so nothing is hidden.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import final

import msgspec

from regiment.hierarchy._ranges import model_given, settings_given
from regiment.hierarchy._reply_json import json_objects, texts_of
from regiment.hierarchy.guard._types import GuardLike, as_guardrails
from regiment.models import Model, ModelSettings

__all__ = ("Critic", "Verdict", "parse_verdict")

_PROMPT = """\
Judge whether the committed step results below fully meet the goal. Reply with
JSON only: {"passed": true or false, "feedback": "what is missing or wrong, concretely",
"open_questions": ["..."]}. Pass only if nothing important is missing."""


@final
@dataclass(frozen=True, kw_only=True)
class Critic:
    """An optional model call that judges a round's result.

    Attributes:
        model: the critic's model; ``None`` uses the planner's.
        prompt: instructions for the critic.
        settings: how its calls are tuned, over the team's ``settings``.
        guardrails: guards around the critic's model calls (after the team's).
    """

    model: Model | None = None
    prompt: str = _PROMPT
    settings: ModelSettings | None = None
    guardrails: Sequence[GuardLike] = ()

    def __post_init__(self) -> None:
        model_given("Critic", "model", self.model, optional=True)
        settings_given("Critic", settings=self.settings)
        own = as_guardrails(self.guardrails, "critic: ", ("model_request", "model_reply"))
        object.__setattr__(self, "guardrails", own)


class Verdict(msgspec.Struct, frozen=True, kw_only=True):
    """The critic's judgement of one round.

    Attributes:
        round: the round judged (1 for the first).
        passed: whether the goal is met.
        feedback: what is missing or wrong (empty when passed).
        open_questions: questions the critic left open.
        warning: set when the critic's reply could not be parsed and the
            verdict was taken as passed by rule.
    """

    round: int
    passed: bool
    feedback: str = ""
    open_questions: tuple[str, ...] = ()
    warning: str | None = None


_WORDS = {"true": True, "false": False, "yes": True, "no": False}


def parse_verdict(text: str, *, round: int) -> Verdict | None:
    """Read a critic reply (JSON, possibly fenced or inside prose); ``None`` if it does not parse.

    Only ``passed`` must be clear (``true``/``false``, or those words as a string):
    a ``"feedback"`` that is ``null`` or a list, or ``"open_questions"`` given as one
    string, is read as meant, so a critic's plain "no" is never lost to its wording.
    """
    for reply in json_objects(text):
        passed = reply.get("passed")
        if isinstance(passed, str):
            passed = _WORDS.get(passed.strip().lower())
        if isinstance(passed, bool):
            return Verdict(
                round=round,
                passed=passed,
                feedback="\n".join(texts_of(reply.get("feedback"))),
                open_questions=texts_of(reply.get("open_questions")),
            )
    return None
