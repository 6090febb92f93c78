"""The synthesis asked again (its first reply empty, or a structured answer that did
not validate) is held as its first ask is: it starts only if the run can still pay for
it once the first reply's spend is counted, and its reply is held to what is left after
that. It was sent with the first ask's ``max_tokens``, so a tight budget could be spent
twice over through it. An ask the budget cannot pay for ends the run ``partial`` on that
limit (or raises ``BudgetExceeded``), as any budget stop does: it used to complete with
the empty answer (or fail with ``OutputInvalid``, a structured one)."""

from __future__ import annotations

import logging

import pydantic
import pytest

from regiment.errors import BudgetExceeded
from regiment.hierarchy import Budget, BudgetExhausted, Planner, RunResult, Team, Worker
from regiment.models import (
    ModelRequest,
    ModelResponse,
    Price,
    ScriptedModel,
    TextPart,
    Usage,
    effective_settings,
    estimate_tokens,
)

from .brains import plan_json

pytestmark = pytest.mark.anyio

WANT = 300  # what the synthesizer's good answer would write, if its max_tokens let it
WHOLE = Price(input=1.0, output=2.0)  # whole micro-dollars a token: input + 2 x output


class Answer(pydantic.BaseModel):
    answer: str


class Synth:
    """Honours ``max_tokens`` as a real model does; the synthesizer's first reply is
    empty (or, ``structured``, not valid) and writes ``first`` tokens."""

    def __init__(self, first: int, structured: bool = False) -> None:
        self.first, self.structured = first, structured
        self.empty_twice = False  # its second reply is empty too
        self.asked: list[int] = []  # the synthesizer's max_tokens, each ask

    def __call__(self, request: ModelRequest) -> ModelResponse:
        limit = effective_settings(None, request).max_tokens or request.max_tokens
        if request.role == "planner":
            text, wants = plan_json({"id": "s1", "description": "part"}), 20
        elif request.role != "synthesizer":
            text, wants = "done", 20
        else:
            self.asked.append(limit)
            good = '{"answer": "the answer"}' if self.structured else "the answer"
            bad = '{"wrong": 1}' if self.structured else ""
            text, wants = (bad, self.first) if len(self.asked) == 1 else (good, WANT)
            text = bad if self.empty_twice else text
        written = min(limit, wants)
        return ModelResponse(
            parts=(TextPart(text=text),) if text else (),
            usage=Usage(input_tokens=estimate_tokens(request), output_tokens=written),
            stop_reason="end_turn" if written == wants else "max_tokens",
            model="synth",
        )


def _team(synth: Synth, budget: Budget, price: Price | None = None) -> Team:
    model = ScriptedModel(synth, price=price)
    return Team(
        name="t",
        planner=Planner(model=model),
        workers=[Worker(name="w", description="works", model=model)],
        budget=budget,
        output_type=Answer if synth.structured else None,
    )


async def _unheld(structured: bool = False) -> tuple[RunResult, Synth]:
    """The run with no limit: what its first synthesis ask is left room for is then
    what the tight budgets below leave it."""
    synth = Synth(first=10_000, structured=structured)
    return await _team(synth, Budget(), WHOLE).run("goal"), synth


async def test_an_empty_answer_that_spent_what_was_left_is_not_asked_again(
    caplog: pytest.LogCaptureFixture,
) -> None:
    unheld, _ = await _unheld()
    before = unheld.usage.output_tokens - unheld.usage_by_role["synthesizer"].output_tokens
    limit = before + 100  # the synthesis may write 100: its first (empty) reply does
    synth = Synth(first=10_000)
    with caplog.at_level(logging.WARNING, logger="regiment.run"):
        result = await _team(synth, Budget(output_tokens=limit)).run("goal")
    assert synth.asked == [100]  # not asked again: it would have been held to 100 again
    assert result.usage.output_tokens == limit
    # It ended "completed" with the answer "": the budget stopped it, as any budget stop
    # does, so it ends partial, naming the limit, its committed step kept in the answer.
    assert (result.status, result.budget_exhausted) == ("partial", "output_tokens")
    assert result.answer == "Partial result (budget exhausted: output_tokens).\ns1: done"
    assert result.committed == ("s1",)
    (ended,) = [e for e in result.events if isinstance(e, BudgetExhausted)]
    assert (ended.limit, ended.step_id) == ("output_tokens", None)
    assert "the synthesizer's answer was empty" in ended.detail
    (warning,) = [r for r in caplog.records if "budget exhausted" in r.getMessage()]
    assert "output_tokens budget has nothing left to ask again" in warning.getMessage()


async def test_an_empty_answer_is_asked_again_held_to_what_the_first_left() -> None:
    unheld, _ = await _unheld()
    before = unheld.usage.output_tokens - unheld.usage_by_role["synthesizer"].output_tokens
    synth = Synth(first=40)
    result = await _team(synth, Budget(output_tokens=before + 100)).run("goal")
    assert synth.asked == [100, 60]
    assert result.usage.output_tokens == before + 100
    assert (result.status, result.answer) == ("completed", "the answer")


async def test_money_is_not_spent_twice_through_a_second_ask(
    caplog: pytest.LogCaptureFixture,
) -> None:
    unheld, _ = await _unheld()
    before = unheld.usage.micro_usd - unheld.usage_by_role["synthesizer"].micro_usd
    asked = unheld.usage_by_role["synthesizer"].input_tokens // 2  # about its first input
    # the synthesis' first ask may write about 100 tokens (2 micro-dollars each)
    usd = before + asked + 200
    synth = Synth(first=10_000)
    with caplog.at_level(logging.WARNING, logger="regiment.models"):
        result = await _team(synth, Budget(usd=usd / 1_000_000), WHOLE).run("goal")
    assert len(synth.asked) == 1  # its empty reply spent what was left: not asked again
    (cut,) = [r for r in caplog.records if "its budget had left for it" in r.getMessage()]
    assert "Budget.usd" in cut.getMessage()  # the limit that held it is named
    assert result.usage.micro_usd <= usd
    assert (result.status, result.budget_exhausted) == ("partial", "usd")
    assert result.answer == "Partial result (budget exhausted: usd).\ns1: done"


async def test_a_structured_answer_is_not_asked_again_past_the_budget() -> None:
    unheld, _ = await _unheld(structured=True)
    before = unheld.usage.output_tokens - unheld.usage_by_role["synthesizer"].output_tokens
    limit = before + 100
    synth = Synth(first=10_000, structured=True)
    result = await _team(synth, Budget(output_tokens=limit)).run("goal")
    assert synth.asked == [100]
    # It failed with OutputInvalid, as if the answer could never validate: the budget
    # stopped it, so it ends partial as other budget stops do (no validated output).
    assert (result.status, result.budget_exhausted) == ("partial", "output_tokens")
    assert result.output is None
    assert result.answer.startswith("Partial result (budget exhausted: output_tokens).")
    assert result.usage.output_tokens == limit
    assert result.model_calls == unheld.model_calls - 1  # the one ask not made
    (ended,) = [e for e in result.events if isinstance(e, BudgetExhausted)]
    assert "the synthesizer's answer was not valid" in ended.detail


async def test_with_on_exhausted_raise_an_unasked_empty_answer_raises() -> None:
    unheld, _ = await _unheld()
    before = unheld.usage.output_tokens - unheld.usage_by_role["synthesizer"].output_tokens
    budget = Budget(output_tokens=before + 100, on_exhausted="raise")
    with pytest.raises(BudgetExceeded) as raised:
        await _team(Synth(first=10_000), budget).run("goal")
    error = raised.value
    assert error.limit == "output_tokens"
    assert "the synthesizer's answer was empty" in str(error)
    failed = getattr(error, "failed", None)
    assert failed is not None
    assert failed.committed == ("s1",)
    assert failed.usage.output_tokens == before + 100  # the empty reply is counted


async def test_a_second_empty_answer_the_budget_paid_for_still_completes(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # Not a budget stop: asked again within the budget, the model answered "" again.
    synth = Synth(first=40)
    synth.empty_twice = True
    with caplog.at_level(logging.WARNING, logger="regiment.run"):
        result = await _team(synth, Budget(output_tokens=100_000)).run("goal")
    assert len(synth.asked) == 2
    assert (result.status, result.answer, result.budget_exhausted) == ("completed", "", None)
    assert any("again when asked once more" in r.getMessage() for r in caplog.records)
