"""A synthesis cut while it is asked again is charged for its earlier asks too.

A synthesis whose first reply was empty (or, with ``Team.output_type``, did not validate)
is asked again. Cut while that ask was in flight (the run cancelled), the run charged one
model call at its most and nothing for the first ask, whose reply had come back and was
billed: the synthesizer's usage and the run's model calls left it out. Now the call's
watch learns what the earlier asks spent as the synthesis asks again, and a cut charges
them at what they reported (no estimate) besides the ask in flight at its most.

The second ask's model is held on an Event it never gets; the run is cancelled once it is.
"""

from __future__ import annotations

import json

import anyio
import pydantic
import pytest

from regiment.hierarchy import Budget, Planner, RunResult, Team, Worker
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

FIRST = Usage(input_tokens=40, output_tokens=3)  # what the first ask's reply reports


class Answer(pydantic.BaseModel):
    title: str


async def _cut_while_asked_again(first_text: str, structured: bool) -> RunResult:
    asked_again, never = anyio.Event(), anyio.Event()
    asks = 0

    async def brain(request: ModelRequest) -> str | ModelResponse:
        nonlocal asks
        if request.role == "planner":
            return json.dumps({"steps": [{"id": "s1", "description": "draft"}]})
        if request.role != "synthesizer":
            return "drafted"
        asks += 1
        if asks == 1:
            part = TextPart(text=first_text)
            return ModelResponse(parts=(part,), stop_reason="end_turn", usage=FIRST, model="m")
        asked_again.set()
        await never.wait()  # until the run's cancel cuts it
        return "never"

    model = ScriptedModel(brain, price=PRICE)
    team = Team(
        name="reasked",
        planner=Planner(model=model),
        workers=[Worker(name="w", description="drafts", model=model)],
        budget=Budget(usd=1.0),
        output_type=Answer if structured else None,
    )
    return await cancelled_once(team, asked_again.wait)


@pytest.mark.parametrize(("first_text", "structured"), [("", False), ("not json", True)])
async def test_a_synthesis_cut_while_asked_again_is_charged_its_first_ask(
    first_text: str, structured: bool
) -> None:
    result = await _cut_while_asked_again(first_text, structured)
    assert result.model_calls == 4  # the plan, s1, both asks of the synthesis
    most = result.estimated_usage  # the second ask, at its most
    assert most.output_tokens > 0
    synthesizer = result.usage_by_role["synthesizer"]
    assert synthesizer == most + priced(FIRST, PRICE)
