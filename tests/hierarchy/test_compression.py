"""Compression: only when the carried context passes its threshold, and what must
survive (the goal, every committed step id, the latest critique) survives."""

from __future__ import annotations

import json
import re

import pytest

from regiment.hierarchy import (
    Budget,
    Compression,
    ContextCompressed,
    Critic,
    Planner,
    Team,
    Worker,
    parse_memory,
)
from regiment.models import ModelRequest, ModelResponse, ScriptedModel, TextPart, text_response

from .brains import Brain, plan_json, step_of

pytestmark = pytest.mark.anyio

GOAL = "Add up the three readings exactly: report 'total N'."
READINGS = {"alpha": 17, "beta": 20, "gamma": 5}


def _text(request: ModelRequest) -> str:
    return "\n".join(p.text for m in request.messages for p in m.parts if isinstance(p, TextPart))


class SumBrain(Brain):
    """Workers read a meter (with a lot of noise around the number), the
    compressor keeps only the numbers, and the synthesizer adds up whatever
    numbers the committed lines carry — so it gets the same total from raw
    outputs and from working memory, but only if no step was dropped."""

    def __init__(
        self, *, forget: str | None = None, noise: int = 80, as_data: bool = False
    ) -> None:
        steps = [{"description": f"read meter {name}"} for name in READINGS]
        super().__init__([plan_json(*steps)])
        self.forget = forget  # a step id the compressor "forgets" to mention
        self.noise = noise  # lines of noise around each reading
        self.as_data = as_data  # facts as JSON objects, and no open questions (null)
        self.compressor_requests: list[ModelRequest] = []
        self.synthesis_requests: list[ModelRequest] = []

    async def __call__(self, request: ModelRequest) -> ModelResponse | str:
        if request.role == "compressor":
            self.compressor_requests.append(request)
            facts = {}
            for sid, value in re.findall(r"- (s\d+) \([^)]*\): .*?reading=(\d+)", _text(request)):
                if sid != self.forget:
                    facts[sid] = {"reading": int(value)} if self.as_data else f"reading={value}"
            questions = None if self.as_data else ["is gamma calibrated?"]
            return json.dumps({"facts": facts, "open_questions": questions})
        if request.role == "synthesizer":
            self.synthesis_requests.append(request)
            numbers = re.findall(r"reading\W{1,3}(\d+)", _text(request))
            return text_response(f"total {sum(int(n) for n in numbers)}")
        if request.role == "worker":
            _, description = step_of(request)
            noise = "calibration log line; " * self.noise
            return f"{noise} reading={READINGS[description.split()[-1]]} {noise}"
        return await super().__call__(request)


def _team(brain: Brain, compression: Compression | None, budget: Budget | None = None) -> Team:
    model = ScriptedModel(brain)
    return Team(
        name="t",
        planner=Planner(model=model),
        workers=[Worker(name="w", description="reads meters", model=model)],
        compression=compression,
        budget=budget or Budget(),
    )


async def test_with_and_without_compression_reach_the_same_answer() -> None:
    plain = SumBrain()
    squeezed = SumBrain()
    without = await _team(plain, None).run(GOAL)
    with_it = await _team(squeezed, Compression(threshold_tokens=200)).run(GOAL)

    assert without.answer == with_it.answer == "total 42"
    assert plain.compressor_requests == []
    assert len(squeezed.compressor_requests) == 1
    (event,) = [e for e in with_it.events if isinstance(e, ContextCompressed)]
    assert event.before_tokens > 200
    assert event.after_tokens < event.before_tokens / 10
    assert sorted(event.kept_step_ids) == ["s1", "s2", "s3"]
    # The goal never went to the compressor, and reached the synthesizer verbatim.
    assert GOAL not in _text(squeezed.compressor_requests[0])
    assert GOAL in _text(squeezed.synthesis_requests[0])


async def test_a_step_the_compressor_drops_keeps_its_own_output() -> None:
    brain = SumBrain(forget="s2")
    result = await _team(brain, Compression(threshold_tokens=200)).run(GOAL)
    assert result.memory is not None
    assert set(result.memory.facts) == {"s1", "s2", "s3"}
    assert "reading=20" in result.memory.facts["s2"]
    assert result.memory.open_questions == ("is gamma calibrated?",)
    assert result.answer == "total 42"


async def test_no_compression_below_the_threshold() -> None:
    brain = SumBrain()
    result = await _team(brain, Compression(threshold_tokens=100_000)).run(GOAL)
    assert brain.compressor_requests == []
    assert result.memory is None
    assert not any(isinstance(e, ContextCompressed) for e in result.events)


async def test_a_compression_the_budget_cannot_pay_for_is_skipped(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # Five model calls: the plan, three steps and the answer. A compression would
    # take the answer's call, and the run would end partial with the raw outputs;
    # the answer is written from the context as it is instead, and a warning says so.
    brain = SumBrain()
    budget = Budget(model_calls=5)
    result = await _team(brain, Compression(threshold_tokens=200), budget).run(GOAL)
    assert brain.compressor_requests == []
    assert (result.status, result.answer, result.memory) == ("completed", "total 42", None)
    assert "goes on uncompressed" in caplog.text
    assert "compressor" not in result.usage_by_role


async def test_latest_critique_is_kept_through_compression() -> None:
    class CriticSumBrain(SumBrain):
        def __init__(self) -> None:
            super().__init__()
            self.plans = [*self.plans, plan_json({"description": "re-read meter gamma"})]
            self.critic_calls = 0

        async def __call__(self, request: ModelRequest) -> ModelResponse | str:
            if request.role == "critic":
                self.critic_calls += 1
                passed = self.critic_calls > 1
                return json.dumps({"passed": passed, "feedback": "" if passed else "re-read gamma"})
            return await super().__call__(request)

    brain = CriticSumBrain()
    model = ScriptedModel(brain)
    team = Team(
        name="t",
        planner=Planner(model=model),
        workers=[Worker(name="w", description="reads meters", model=model)],
        critic=Critic(),
        compression=Compression(threshold_tokens=200),
    )
    result = await team.run(GOAL)
    assert result.rounds == 2
    # Compressed before the first critique, and again once round two added a noisy step.
    assert len(brain.compressor_requests) == 2
    assert "re-read gamma" in _text(brain.compressor_requests[1])
    assert result.memory is not None
    assert set(result.memory.facts) == {"s1", "s2", "s3", "s4"}


def test_a_compressor_reply_nested_thousands_deep_keeps_each_steps_own_output() -> None:
    # Was a RecursionError out of parse_memory: the run failed ("the run's planner failed").
    deep = '{"facts": ' + "[" * 3000 + "]" * 3000 + "}"
    memory = parse_memory(deep, committed={"s1": "42 apples"})
    assert memory.facts == {"s1": "42 apples"}
    assert memory.open_questions == ()


async def test_a_step_the_compressor_leaves_out_keeps_all_of_its_output(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # Was cut to its first 2,000 characters, silently: a reading past them was lost.
    brain = SumBrain(forget="s2", noise=200)
    result = await _team(brain, Compression(threshold_tokens=200)).run(GOAL)
    assert result.memory is not None
    assert "reading=20" in result.memory.facts["s2"]
    assert result.answer == "total 42"
    assert "gave no facts for step s2, so it is carried with its own output" in caplog.text


async def test_facts_given_as_json_data_are_kept(caplog: pytest.LogCaptureFixture) -> None:
    # A fact given as an object (or "open_questions": null) made the whole reply
    # unreadable: every step kept its raw output, and the compression was lost.
    result = await _team(SumBrain(as_data=True), Compression(threshold_tokens=200)).run(GOAL)
    assert result.memory is not None
    assert result.memory.facts == {
        "s1": '{"reading":17}',
        "s2": '{"reading":20}',
        "s3": '{"reading":5}',
    }
    assert result.memory.open_questions == ()
    assert result.answer == "total 42"
    assert "compressor" not in caplog.text


async def test_a_compressor_reply_that_does_not_parse_is_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    class Chatty(SumBrain):
        async def __call__(self, request: ModelRequest) -> ModelResponse | str:
            if request.role == "compressor":
                return "Sure! The readings are all in order."
            return await super().__call__(request)

    result = await _team(Chatty(), Compression(threshold_tokens=200)).run(GOAL)
    assert result.answer == "total 42"
    # It said "did not parse (...); so step(s) s1, s2, s3: they are carried ...", also
    # for a reply that parsed as JSON but held no facts object.
    assert (
        "the compressor's reply held no JSON facts object for steps s1, s2, s3 "
        "('Sure! The readings are all in order.'), so they are carried with their own output"
    ) in caplog.text


def test_a_memory_in_prose_that_has_braces_of_its_own_is_read() -> None:
    reply = 'Kept {all} of it: {"facts": {"s1": "reading=17"}} (see {log}).'
    memory = parse_memory(reply, committed={"s1": "noise reading=17 noise"})
    assert memory.facts == {"s1": "reading=17"}
