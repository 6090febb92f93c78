"""The progress lines' token count per step, read from a real run's spans."""

from __future__ import annotations

import json

import pytest
from opentelemetry.sdk.trace import TracerProvider

from regiment.cli._progress import TokenMeter
from regiment.hierarchy import Planner, Team, TeamWorker, Worker
from regiment.models import ModelRequest, ModelResponse, ScriptedModel, text_response
from regiment.telemetry import Telemetry

pytestmark = pytest.mark.anyio


def _office(request: ModelRequest) -> ModelResponse:
    if request.role == "planner":
        steps = [
            {"description": "research it", "worker": "research"},
            {"description": "write it up", "worker": "writer", "depends_on": ["s1"]},
        ]
        return text_response(json.dumps({"steps": steps}))
    return text_response("done")


def _research(request: ModelRequest) -> ModelResponse:
    if request.role == "planner":  # its own s1 and s2, as the parent's plan has
        steps = [{"description": "find sources"}, {"description": "read them"}]
        return text_response(json.dumps({"steps": steps}))
    return text_response("found and read " + "at length " * 40)


async def test_a_nested_teams_steps_count_toward_the_step_that_gave_it_the_work() -> None:
    meter = TokenMeter()
    provider = TracerProvider()
    provider.add_span_processor(meter)
    research = Team(
        name="research",
        planner=Planner(model=ScriptedModel(_research)),
        workers=[Worker(name="reader", description="Reads.", model=ScriptedModel(_research))],
    )
    team = Team(
        name="office",
        planner=Planner(model=ScriptedModel(_office)),
        workers=[
            TeamWorker(name="research", description="Researches.", team=research),
            Worker(name="writer", description="Writes.", model=ScriptedModel(_office)),
        ],
        telemetry=Telemetry(provider),
    )
    result = await team.run("a memo")
    used = {r.step_id: r.usage.input_tokens + r.usage.output_tokens for r in result.steps}
    # Before, the nested team's own s2 was counted as the writer's s2.
    assert {sid: meter.step_tokens(sid) for sid in ("s1", "s2")} == used
    assert meter.total() == result.usage.input_tokens + result.usage.output_tokens
