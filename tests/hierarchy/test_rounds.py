"""Critique rounds: a critic that finds the goal unmet starts another round that
builds on what was already paid for; rounds are bounded; a broken critic has a rule."""

from __future__ import annotations

import json
import logging

import msgspec
import pytest

from regiment.cli._view import describe
from regiment.errors import BudgetExceeded
from regiment.hierarchy import (
    Budget,
    BudgetExhausted,
    Critic,
    CritiqueCompleted,
    Planner,
    RoundStarted,
    Team,
    Worker,
    parse_verdict,
)
from regiment.hierarchy._budget import OnExhausted
from regiment.models import ModelRequest, ModelResponse, ScriptedModel, TextPart

from .brains import Brain, plan_json

pytestmark = pytest.mark.anyio


class CriticBrain(Brain):
    """A Brain whose critic answers from a list."""

    def __init__(self, plans: list[str], verdicts: list[str]) -> None:
        super().__init__(plans)
        self.verdicts = verdicts
        self.critic_requests: list[ModelRequest] = []

    async def __call__(self, request: ModelRequest) -> ModelResponse | str:
        if request.role == "critic":
            self.critic_requests.append(request)
            return self.verdicts[len(self.critic_requests) - 1]
        return await super().__call__(request)


def _team(
    brain: Brain,
    *,
    rounds: int = 3,
    on_exhausted: OnExhausted = "partial",
    model_calls: int | None = None,
    tokens: int | None = None,
) -> Team:
    model = ScriptedModel(brain)
    budget = Budget(rounds=rounds, on_exhausted=on_exhausted, model_calls=model_calls)
    return Team(
        name="t",
        planner=Planner(model=model),
        workers=[Worker(name="w", description="w", model=model)],
        critic=Critic(),
        budget=msgspec.structs.replace(budget, tokens=tokens),
    )


def _verdict(passed: bool, feedback: str = "") -> str:
    return json.dumps({"passed": passed, "feedback": feedback})


def _text(request: ModelRequest) -> str:
    return "\n".join(p.text for m in request.messages for p in m.parts if isinstance(p, TextPart))


async def test_failed_critique_starts_a_round_that_reuses_round_one() -> None:
    plans = [
        plan_json({"description": "find the price"}),
        plan_json({"description": "find the tax", "depends_on": ["s1"]}),
    ]
    brain = CriticBrain(plans, [_verdict(False, "the tax is missing"), _verdict(True)])
    result = await _team(brain).run("price with tax")

    assert result.rounds == 2
    assert [v.passed for v in result.verdicts] == [False, True]
    assert result.verdicts[0].feedback == "the tax is missing"
    assert result.committed == ("s1", "s2")
    # round one's step ran once; round two only added the missing step
    assert [r.step_id for r in result.steps] == ["s1", "s2"]
    assert len(brain.worker_requests) == 2
    round_two = _text(brain.plan_requests[1])
    assert round_two.startswith("ROUND 2")
    assert "did: find the price" in round_two
    assert "the tax is missing" in round_two
    assert [p.version for p in result.plans] == [1, 2]
    assert [s.id for s in result.plans[1].steps] == ["s1", "s2"]
    kinds = [type(e) for e in result.events]
    assert kinds.count(CritiqueCompleted) == 2
    assert kinds.count(RoundStarted) == 1
    assert result.usage_by_role.keys() >= {"critic", "planner", "w", "synthesizer"}


async def test_rounds_are_bounded_by_the_budget() -> None:
    plans = [plan_json({"description": f"attempt {i}"}) for i in range(5)]
    brain = CriticBrain(plans, [_verdict(False, "still not good")] * 5)
    result = await _team(brain, rounds=2).run("something hard")
    assert result.rounds == 2
    assert [v.passed for v in result.verdicts] == [False, False]
    assert len(brain.plan_requests) == 2
    # The critic never found the goal met: the answer is what was done, marked partial.
    assert (result.status, result.budget_exhausted) == ("partial", "rounds")
    assert result.answer == "final answer"
    (ran_out,) = [e for e in result.events if isinstance(e, BudgetExhausted)]
    assert ran_out.limit == "rounds"
    assert "judged round 2 not done" in ran_out.detail


async def test_rounds_run_out_raise_when_the_budget_says_so() -> None:
    plans = [plan_json({"description": f"attempt {i}"}) for i in range(5)]
    brain = CriticBrain(plans, [_verdict(False, "still not good")] * 5)
    with pytest.raises(BudgetExceeded) as caught:
        await _team(brain, rounds=2, on_exhausted="raise").run("something hard")
    assert caught.value.limit == "rounds"


async def test_a_passed_last_round_is_completed() -> None:
    plans = [plan_json({"description": f"attempt {i}"}) for i in range(5)]
    brain = CriticBrain(plans, [_verdict(False, "not yet"), _verdict(True)])
    result = await _team(brain, rounds=2, on_exhausted="raise").run("something hard")
    assert (result.status, result.budget_exhausted, result.rounds) == ("completed", None, 2)


async def test_a_round_the_budget_cannot_critique_is_answered_partial() -> None:
    # Six model calls: plan, step, critique (not met), plan, step; the critique of
    # round 2 and an answer after it would need two, so round 2 goes unjudged: the
    # answer is written from what was done, and it is not "completed".
    plans = [plan_json({"description": f"attempt {i}"}) for i in range(5)]
    brain = CriticBrain(plans, [_verdict(False, "still not good")] * 5)
    result = await _team(brain, model_calls=6).run("something hard")
    assert len(brain.critic_requests) == 1
    assert (result.status, result.budget_exhausted, result.rounds) == ("partial", "model_calls", 2)
    assert result.answer == "final answer"
    (ran_out,) = [e for e in result.events if isinstance(e, BudgetExhausted)]
    assert "no budget left to critique round 2" in ran_out.detail
    with pytest.raises(BudgetExceeded) as caught:
        await _team(CriticBrain(plans, brain.verdicts), model_calls=6, on_exhausted="raise").run(
            "something hard"
        )
    assert caught.value.limit == "model_calls"
    assert caught.value.failed is not None
    assert caught.value.failed.committed == ("s1", "s2")


async def test_a_critique_would_take_the_tokens_the_answer_needs_is_not_asked() -> None:
    # The tokens left pay for the answer, not for a critique as well: the critique took
    # them, and the run ended with no synthesised answer. The round goes unjudged now.
    plans = [plan_json({"description": "attempt"})]
    free = await _team(CriticBrain(plans, [_verdict(True)])).run("goal")
    roles = free.usage_by_role
    spent = [roles[role].total_tokens for role in ("planner", "w", "synthesizer")]
    brain = CriticBrain(plans, [_verdict(True)])
    result = await _team(brain, tokens=sum(spent) + 10).run("goal")
    assert brain.critic_requests == []
    assert (result.status, result.budget_exhausted) == ("partial", "tokens")
    assert result.answer == "final answer"


async def test_an_answer_the_tokens_left_cannot_pay_for_after_the_last_round_ends_it() -> None:
    # The critic's long "no" spends the tokens the answer would have needed: the run
    # answers from what was done, without a synthesis. (It waited for ever: the rounds
    # had run out, and a second spent limit was not acted on.)
    plans = [plan_json({"description": "attempt"})]
    verdict = _verdict(False, "not good enough, " * 60)
    free = await _team(CriticBrain(plans, [verdict]), rounds=1).run("goal")
    roles = free.usage_by_role
    need = roles["planner"].total_tokens + roles["w"].total_tokens
    # + 1: a tokens limit lets a call start only with room for its input and one output
    # token (the critique's reply then takes the rest, and more).
    tokens = need + roles["critic"].input_tokens + 1 + roles["synthesizer"].input_tokens
    brain = CriticBrain(plans, [verdict])
    result = await _team(brain, rounds=1, tokens=tokens).run("goal")
    assert len(brain.critic_requests) == 1
    assert (result.status, result.budget_exhausted) == ("partial", "rounds")
    assert result.answer.startswith("Partial result (budget exhausted: rounds)")
    assert result.usage.total_tokens <= tokens + roles["critic"].output_tokens  # one reply over


async def test_a_verdict_nested_thousands_deep_is_asked_again() -> None:
    # Was a RecursionError out of parse_verdict: the run failed ("the run's planner failed").
    deep = '{"passed": ' + "[" * 3000 + "]" * 3000 + "}"
    brain = CriticBrain([plan_json({"description": "x"})], [deep, _verdict(True)])
    result = await _team(brain).run("goal")
    assert result.status == "completed"
    assert "did not parse" in _text(brain.critic_requests[1])
    assert [v.passed for v in result.verdicts] == [True]


async def test_unparseable_critic_is_asked_again_then_taken_as_passed_with_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    brain = CriticBrain([plan_json({"description": "x"})], ["looks fine to me", "yes, really fine"])
    with caplog.at_level(logging.WARNING, logger="regiment.run"):
        result = await _team(brain).run("goal")
    # Only verdict.warning said so: no log line, and `regiment run` printed "critique of
    # round 1: passed", so a broken critic (the run's quality gate) passed every run unseen.
    (record,) = [r for r in caplog.records if "critic" in r.getMessage()]
    assert record.levelno == logging.WARNING
    assert record.getMessage() == (
        "the critic's reply did not parse after 2 attempts; taken as passed: 'yes, really "
        'fine\' (round 1; the critic must reply with JSON such as {"passed": true})'
    )
    assert getattr(record, "run_id", None) == result.run_id
    line = describe(next(e for e in result.events if isinstance(e, CritiqueCompleted)))
    assert line == (
        "critique of round 1: passed, unjudged (the critic's reply did not parse after 2 "
        "attempts; taken as passed: 'yes, really fine')"
    )
    assert len(brain.critic_requests) == 2
    assert "did not parse" in _text(brain.critic_requests[1])
    (verdict,) = result.verdicts
    assert verdict.passed
    assert verdict.warning is not None
    assert "yes, really fine" in verdict.warning
    assert result.rounds == 1


async def test_a_plain_no_is_a_no_whatever_the_wording_of_its_other_fields() -> None:
    # A "passed": false with a null feedback (or a list, or one open question as a
    # string) did not parse, so after one more such reply the round was taken as passed.
    plans = [plan_json({"description": d}) for d in ("x", "y", "z")]
    no = json.dumps({"passed": False, "feedback": None, "open_questions": "is y done?"})
    listed = json.dumps({"passed": "false", "feedback": ["add y", "cite it"]})
    brain = CriticBrain(plans, [no, listed, _verdict(True)])
    result = await _team(brain).run("goal")
    assert [(v.passed, v.warning) for v in result.verdicts] == [(False, None)] * 2 + [(True, None)]
    assert result.verdicts[0].open_questions == ("is y done?",)
    assert result.verdicts[1].feedback == "add y\ncite it"
    assert (result.rounds, result.status) == (3, "completed")


async def test_planner_may_finish_a_round_with_nothing_more_to_do() -> None:
    plans = [plan_json({"description": "x"}), '{"steps": []}']
    brain = CriticBrain(plans, [_verdict(False, "could be better")])
    result = await _team(brain).run("goal")
    assert result.rounds == 2
    assert result.committed == ("s1",)
    assert len(brain.critic_requests) == 1  # nothing new was done, so nothing new to judge
    assert result.answer == "final answer"


def test_a_verdict_in_prose_that_has_braces_of_its_own_is_read() -> None:
    # Only the span from the first "{" to the last "}" was tried: prose braces around
    # the verdict made it unreadable, and two such replies were taken as passed.
    reply = 'Steps {s1, s2} are weak. {"passed": false, "feedback": "add the tax"} See {notes}.'
    verdict = parse_verdict(reply, round=1)
    assert verdict is not None
    assert (verdict.passed, verdict.feedback) == (False, "add the tax")


async def test_a_first_plan_with_nothing_to_do_goes_straight_to_the_answer() -> None:
    # The critic judged the empty round 1, and its "no" made the planner plan work it
    # had found unneeded, round after round.
    brain = CriticBrain(['{"steps": []}'], [_verdict(False, "do something")])
    result = await _team(brain).run("what is 2 + 2?")
    assert brain.critic_requests == []
    assert (result.rounds, result.verdicts, result.steps) == (1, (), ())
    assert (result.status, result.answer) == ("completed", "final answer")


async def test_without_a_critic_there_is_one_round() -> None:
    brain = Brain([plan_json({"description": "x"})])
    model = ScriptedModel(brain)
    team = Team(
        name="t",
        planner=Planner(model=model),
        workers=[Worker(name="w", description="w", model=model)],
    )
    result = await team.run("goal")
    assert result.rounds == 1
    assert result.verdicts == ()
