"""A nested run's judge calls, and its checks before a critique, a compression and a
dispatch, wait for the run above to give back, as its planner's, critic's and
synthesizer's calls do (``_nested_afford.waited``: one path for all).

Each refused at once when the nested run's own allowance was short, though a sibling in
flight in the run above was about to report and give back more than it lacked: a judge
raised ``BudgetExceeded`` (its guard tripped), a critique was skipped (the nested run
``partial``), a compression skipped, a first step left unsent (the nested run
``partial``, none of its steps run). Each now waits while such
a sibling holds a share, and gives up only once none is left.

The shape is ``test_nested_calls_wait``'s: s1 goes to a nested team; s2..s8 are short
notes whose last call comes back a moment after the nested worker has answered, so
what the nested run asks for next is asked while they still hold their shares.
"""

from __future__ import annotations

import json
import logging

import anyio
import pytest

from regiment.hierarchy import (
    Budget,
    Compression,
    Critic,
    Planner,
    RunResult,
    Team,
    Worker,
)
from regiment.hierarchy.guard import AnswerSubject, Outcome, Pass, guardrail, judge
from regiment.models import (
    Message,
    ModelRequest,
    ModelResponse,
    Price,
    ScriptedModel,
    Usage,
    effective_settings,
    estimate_tokens,
    text_response,
)

from .brains import plan_json
from .limits import budget_of, spent_of
from .nest import SHORT, notes_after, run_above

pytestmark = pytest.mark.anyio

DEAR = Price(input=100.0, output=100.0)  # the judge: a hundred micro-dollars a token
CHEAP = Price(input=1.0, output=1.0)
LONG = "weigh this " * 1000  # what the judge reads: its call is the nested run's dearest
FINDING = "dug up " * 1000  # what the nested worker finds (critique, compress)

PASSED = json.dumps({"passed": True, "feedback": ""})


class Nest:
    """The run above: s1 on the nested team, s2..s8 short notes that hold their shares
    until a moment after the nested worker has answered."""

    def __init__(self, what: str = "judge") -> None:
        self.what = what  # what the nested run asks for while the notes hold their shares
        self.dug = anyio.Event()
        self.judged = 0  # judge calls made
        self.asked: list[str] = []  # the roles the nested planner's model was asked in

    async def digger(self, request: ModelRequest) -> ModelResponse:
        self.dug.set()
        return text_response("found it" if self.what == "judge" else FINDING)

    def inner(self, request: ModelRequest) -> str | ModelResponse:
        self.asked.append(request.role or "")
        if request.role == "planner" and self.what == "dispatch":
            # It writes all it may: the nested run's share is spent before its step starts.
            self.dug.set()
            room = effective_settings(None, request).max_tokens or request.max_tokens
            usage = Usage(input_tokens=estimate_tokens(request), output_tokens=room)
            return text_response(plan_json({"id": "c1", "description": "dig"}), usage=usage)
        if request.role == "planner":
            return plan_json({"id": "c1", "description": "dig"})
        if request.role == "critic":
            return PASSED
        if request.role == "compressor":
            return "dug up a lot"
        return "the nested answer"

    def judge_model(self, request: ModelRequest) -> str:
        self.judged += 1
        return "fine"

    def team(self, budget: Budget) -> Team:
        judge_model = ScriptedModel(self.judge_model, price=DEAR)

        @guardrail("answer", model=judge_model)
        async def weighed(subject: AnswerSubject) -> Outcome:
            asked = ModelRequest(messages=(Message.user(LONG + subject.text),), max_tokens=20)
            await judge(judge_model, asked)
            return Pass()

        inner = ScriptedModel(self.inner, price=CHEAP if self.what == "judge" else DEAR)
        child = Team(
            name="inner",
            planner=Planner(
                model=inner, synthesizer_guardrails=[weighed] if self.what == "judge" else ()
            ),
            workers=[
                Worker(name="d", description="digs", model=ScriptedModel(self.digger, price=CHEAP))
            ],
            critic=Critic() if self.what == "critique" else None,
            compression=Compression(threshold_tokens=500) if self.what == "compress" else None,
        )
        return run_above(child, budget, CHEAP, notes_after(self.dug))

    async def run(self, budget: Budget) -> RunResult:
        with anyio.fail_after(30):  # a wait on a sibling that never gives back would hang
            return await self.team(budget).run("goal")


@pytest.mark.parametrize("limit", ["usd", "tokens"])
async def test_a_nested_runs_judge_waits_for_the_run_aboves_steps_to_give_back(
    limit: str,
) -> None:
    whole = await Nest().run(Budget())
    assert whole.status == "completed"
    need = spent_of(whole, limit)
    nest = Nest()
    result = await nest.run(budget_of(limit, need * 3))
    assert (result.status, result.budget_exhausted) == ("completed", None), result.events
    assert nest.judged == 1
    assert spent_of(result, limit) <= need * 3
    (s1,) = [r for r in result.steps if r.step_id == "s1"]
    assert (s1.status, s1.output) == ("done", "the nested answer")
    assert len(result.committed) == 1 + SHORT


@pytest.mark.parametrize("limit", ["usd", "tokens"])
async def test_a_nested_runs_critique_check_waits_for_the_run_above(limit: str) -> None:
    """The check that a critique and an answer after it can be paid (two calls reading
    all the nested worker found, at the nested planner's dear price) waits; it used to
    leave the round unjudged at once (the nested run ``partial``)."""
    whole = await Nest("critique").run(Budget())
    assert whole.status == "completed"
    need = spent_of(whole, limit)
    nest = Nest("critique")
    result = await nest.run(budget_of(limit, need * 3))
    assert (result.status, result.budget_exhausted) == ("completed", None), result.events
    assert nest.asked == ["planner", "critic", "synthesizer"]
    assert spent_of(result, limit) <= need * 3
    (s1,) = [r for r in result.steps if r.step_id == "s1"]
    assert (s1.status, s1.output) == ("done", "the nested answer")


async def test_a_nested_runs_compression_check_waits_for_the_run_above(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A compression due (the nested worker found a lot) that the nested run's tokens
    cannot pay for with the answer after it waits; it used to be skipped at once (a
    WARNING), the answer then reading all of it uncompressed. (Its check counts model
    calls and tokens, not money.)"""
    whole = await Nest("compress").run(Budget())
    assert whole.status == "completed"
    need = spent_of(whole, "tokens")
    nest = Nest("compress")
    with caplog.at_level(logging.WARNING, logger="regiment.run"):
        result = await nest.run(budget_of("tokens", need * 3))
    assert (result.status, result.budget_exhausted) == ("completed", None), result.events
    assert "cannot pay for a compression" not in caplog.text
    assert nest.asked == ["planner", "compressor", "synthesizer"]
    assert spent_of(result, "tokens") <= need * 3


@pytest.mark.parametrize("limit", ["usd", "tokens"])
async def test_a_nested_runs_dispatch_waits_for_the_run_above(limit: str) -> None:
    """A nested planner's reply that spent the nested run's share leaves its first step
    unsendable: the draw of what it needs to start waits for the run above to give back;
    it used to end the nested run at once (``partial``: no step of it ever ran)."""
    whole = await Nest("dispatch").run(Budget())
    assert whole.status == "completed"
    need = spent_of(whole, limit)
    nest = Nest("dispatch")
    result = await nest.run(budget_of(limit, need * 3))
    assert (result.status, result.budget_exhausted) == ("completed", None), result.events
    assert nest.asked == ["planner", "synthesizer"]
    assert spent_of(result, limit) <= need * 3
    (s1,) = [r for r in result.steps if r.step_id == "s1"]
    assert (s1.status, s1.output) == ("done", "the nested answer")
