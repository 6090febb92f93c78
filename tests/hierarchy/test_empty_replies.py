"""A model reply with no text and no tool call. A worker's was committed as the step's
output ``''``; a synthesizer's completed the run with the answer ``''``; neither was
logged. Now each is asked for again once, with a note; a worker's second empty reply
fails its step (the planner may replan), a synthesizer's is the answer, with a WARNING."""

from __future__ import annotations

import logging

import pytest

from regiment.hierarchy import Planner, RunResult, Team, Worker
from regiment.models import ModelRequest, ScriptedModel, TextPart, ToolResultPart

from .brains import Brain, WorkFn, plan_json

pytestmark = pytest.mark.anyio


def _empty_for(times: int, then: str = "worked") -> tuple[WorkFn, list[str]]:
    said: list[str] = []

    async def work(description: str, results: list[ToolResultPart], request: ModelRequest) -> str:
        said.append(_last_text(request))
        return "" if len(said) <= times else then

    return work, said


def _last_text(request: ModelRequest) -> str:
    part = request.messages[-1].parts[-1]
    return part.text if isinstance(part, TextPart) else ""


async def _run(brain: Brain) -> RunResult:
    model = ScriptedModel(brain)
    worker = Worker(name="w", description="works", model=model)
    return await Team(name="t", planner=Planner(model=model), workers=[worker]).run("goal")


async def test_an_empty_worker_reply_is_asked_again_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    work, said = _empty_for(1)
    with caplog.at_level(logging.INFO, logger="regiment"):
        result = await _run(Brain([plan_json({"description": "x"})], work=work))
    (step,) = result.steps
    assert (step.status, step.output) == ("done", "worked")
    assert "Your reply was empty" in said[1]
    assert step.model_calls == 2  # the empty reply was a call too
    (record,) = [r for r in caplog.records if "reply was empty" in r.getMessage()]
    assert record.name == "regiment.worker"
    assert record.__dict__["step_id"] == "s1"


async def test_a_worker_empty_twice_fails_its_step_and_is_replanned() -> None:
    work, _said = _empty_for(2)
    plans = [plan_json({"description": "x"}), plan_json({"id": "s2", "description": "y"})]
    brain = Brain(plans, work=work)
    result = await _run(brain)
    failed, done = result.steps
    assert failed.status == "failed"
    assert failed.output == ""
    assert failed.error == (
        "the model of worker 'w' gave an empty reply (no text, no tool call), and again when "
        "asked once more; check the worker's model and instructions (a reply cut at "
        "max_tokens while it was thinking is empty too)"
    )
    assert (done.status, done.output) == ("done", "worked")
    assert len(brain.plan_requests) == 2


@pytest.mark.parametrize(("empty", "answer"), [(1, "the answer"), (2, "")])
async def test_an_empty_synthesis_is_asked_again_once(
    caplog: pytest.LogCaptureFixture, empty: int, answer: str
) -> None:
    asked: list[ModelRequest] = []

    def brain(request: ModelRequest) -> str:
        if request.role == "planner":
            return plan_json({"description": "x"})
        if request.role == "worker":
            return "worked"
        asked.append(request)
        return "" if len(asked) <= empty else "the answer"

    model = ScriptedModel(brain)
    worker = Worker(name="w", description="works", model=model)
    team = Team(name="t", planner=Planner(model=model), workers=[worker])
    with caplog.at_level(logging.INFO, logger="regiment"):
        result = await team.run("goal")
    assert (result.status, result.answer) == ("completed", answer)
    assert len(asked) == 2
    assert "Your reply was empty" in _last_text(asked[1])
    assert result.model_calls == 4  # plan, step, two syntheses
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    if answer:
        assert warnings == []
    else:
        (warning,) = warnings
        assert warning.name == "regiment.run"
        assert warning.__dict__["run_id"] == result.run_id
        assert "the run's answer is empty" in warning.getMessage()
