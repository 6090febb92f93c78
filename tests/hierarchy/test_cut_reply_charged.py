"""A planner-side reply that came back, then was cut as the run wound down, is charged at
what it reported.

A synthesis whose reply its guards were judging when the run was cancelled was charged
at the most it could have spent (its held ``max_tokens`` as output: thousands of tokens
more than it wrote), counted as an estimate, and the INFO line said no usage came back,
though it had. Now the call is watched until the planner takes its reply: cut after the
reply came back (its guards judging it, or its reply waiting for the planner's turn), it
is charged at what the reply reported, and that is no estimate.

The reply is held in its guard (an Event it never gets) until the run's cancel cuts it.
"""

from __future__ import annotations

import json
import logging

import anyio
import pytest

from regiment.hierarchy import Budget, Planner, Team, Worker
from regiment.hierarchy.guard import Outcome, Pass, ReplySubject
from regiment.models import (
    ModelRequest,
    ModelResponse,
    ScriptedModel,
    TextPart,
    Usage,
    priced,
)

from .cut_run import PRICE, cancelled_once

pytestmark = pytest.mark.anyio

SAID = Usage(input_tokens=10, output_tokens=5)  # what the synthesis' reply reports


def _brain(request: ModelRequest) -> str | ModelResponse:
    if request.role == "planner":
        return json.dumps({"steps": [{"id": "s1", "description": "draft"}]})
    if request.role == "synthesizer":
        return ModelResponse(
            parts=(TextPart(text="the answer"),), stop_reason="end_turn", usage=SAID, model="m"
        )
    return "drafted"


async def test_a_synthesis_reply_cut_while_its_guards_judge_it_is_charged_what_it_said(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="regiment.run")
    judging, never = anyio.Event(), anyio.Event()

    async def held(subject: ReplySubject) -> Outcome:
        judging.set()
        await never.wait()  # until the run's cancel cuts it
        return Pass()

    model = ScriptedModel(_brain, price=PRICE)
    team = Team(
        name="held",
        planner=Planner(model=model, synthesizer_guardrails=[held]),
        workers=[Worker(name="w", description="drafts", model=model)],
        budget=Budget(usd=1.0),
    )
    result = await cancelled_once(team, judging.wait)
    said = priced(SAID, PRICE)
    assert result.usage_by_role["synthesizer"] == said  # not its most (max_tokens as output)
    assert result.estimated_usage == Usage()  # what it reported: no estimate
    assert result.model_calls == 3  # plan, s1, the synthesis
    (line,) = [r.getMessage() for r in caplog.records if "was not used" in r.getMessage()]
    assert f"run {result.run_id}: synthesizer: the reply to its model call synthesis" in line
    assert "15 tokens (10 input, 5 output), $0.000015" in line
