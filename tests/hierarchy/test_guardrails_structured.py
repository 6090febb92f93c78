"""An answer guard's rewrite of a structured answer (``Team(output_type=...)``) is held
to the type as the synthesizer's answer is: one that no longer validates trips on the
guard (asked once more, then ``GuardrailError``), instead of a run that completed with
``output`` empty and an answer that does not fit."""

from __future__ import annotations

import dataclasses

import pytest

from regiment.errors import GuardrailError
from regiment.hierarchy import GuardrailTripped, RunFailed
from regiment.hierarchy.guard import AnswerSubject, Outcome, Rewrite
from regiment.models import ModelRequest

from .test_structured_answers import MISSING_AMOUNT, VALID, Refund, team_answering

pytestmark = pytest.mark.anyio


def drop_amount(answer: AnswerSubject) -> Outcome:
    return Rewrite(dataclasses.replace(answer, text=MISSING_AMOUNT))


def halve(answer: AnswerSubject) -> Outcome:
    return Rewrite(dataclasses.replace(answer, text=VALID.replace("12.5", "6.25")))


async def test_an_answer_rewritten_out_of_its_type_trips_on_the_guard() -> None:
    seen: list[ModelRequest] = []
    team = team_answering(iter([VALID, VALID]), seen, guardrails=[drop_amount])
    async with team.start() as running, running.stream("refund A-1") as events:
        got = [event async for event in events]
    failed = got[-1]
    assert isinstance(failed, RunFailed)
    assert failed.error_type == GuardrailError.__name__
    assert failed.message == (  # one line: pydantic's own text spans several
        "guardrail 'drop_amount' tripped on the answer: rewrote the answer into one that "
        "does not validate against Refund: amount: Field required"
    )
    assert len(seen) == 2  # asked once more with the reason, as for any answer trip
    assert "Your answer was rejected: guardrail 'drop_amount'" in seen[1].messages[-1].text
    trips = [e for e in got if isinstance(e, GuardrailTripped)]
    assert [(e.guardrail, e.subject) for e in trips] == [("drop_amount", "answer")] * 2


async def test_an_answer_rewritten_within_its_type_is_the_output() -> None:
    team = team_answering(iter([VALID]), [], guardrails=[halve])
    async with team.start() as running:
        result = await running.run("refund A-1")
    assert result.output_as(Refund).amount == 6.25
