"""A model SDK's own retry, logged inside a run's step, names the run, step and worker.

The worker's model is the real ``AnthropicModel`` against the loopback stand-in,
which answers 529 (overloaded) once: the SDK logs "Retrying request" under its
``anthropic`` logger, which knows nothing of runs. ``RunContextFilter`` on the
handler adds the context the engine marked the step's task with.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator

import pytest
from opentelemetry.sdk.trace import TracerProvider

from regiment.hierarchy import Planner, RunContextFilter, Team, Worker
from regiment.models import (
    AnthropicModel,
    ModelRequest,
    ModelResponse,
    ScriptedModel,
    text_response,
)
from regiment.telemetry import Telemetry

from .messages_api import error, message
from .standin import Reply, StandIn, serve

pytestmark = pytest.mark.anyio


@pytest.fixture
async def api() -> AsyncIterator[StandIn]:
    failed = {"type": "api_error", "message": "the stand-in had no reply queued"}
    async for server in serve(
        Reply(500, {"type": "error", "error": failed}, {"x-should-retry": "false"})
    ):
        yield server


def _planner(request: ModelRequest) -> ModelResponse:
    if request.role == "planner":
        return text_response(json.dumps({"steps": [{"id": "s1", "description": "say hi"}]}))
    return text_response("hi")


@pytest.fixture
def context_filter(caplog: pytest.LogCaptureFixture) -> RunContextFilter:
    added = RunContextFilter()
    caplog.handler.addFilter(added)
    return added


@pytest.mark.parametrize("traced", [False, True], ids=["untraced", "traced"])
async def test_an_sdk_retry_in_a_step_carries_the_run_step_and_worker(
    api: StandIn,
    caplog: pytest.LogCaptureFixture,
    context_filter: RunContextFilter,
    traced: bool,
) -> None:
    api.queue(
        error(529, "overloaded_error", "Overloaded", **{"retry-after-ms": "1"}),
        message([{"type": "text", "text": "hello"}]),
    )
    model = AnthropicModel("claude-test-1", api_key="k", base_url=api.base_url, max_retries=1)
    team = Team(
        name="t",
        planner=Planner(model=ScriptedModel(_planner)),
        workers=[Worker(name="greeter", description="Greets.", model=model)],
        telemetry=Telemetry(TracerProvider(shutdown_on_exit=False)) if traced else None,
    )
    with caplog.at_level(logging.INFO, logger="anthropic"):
        async with model, team.start() as running:
            result = await running.run("greet")
    assert result.status == "completed"
    assert len(api.requests) == 2
    (retry,) = [r for r in caplog.records if r.getMessage().startswith("Retrying request")]
    assert retry.name.startswith("anthropic")
    context = (retry.__dict__["run_id"], retry.__dict__["step_id"], retry.__dict__["worker"])
    assert context == (result.run_id, "s1", "greeter")


async def test_outside_a_run_a_record_gets_no_context(
    caplog: pytest.LogCaptureFixture, context_filter: RunContextFilter
) -> None:
    with caplog.at_level(logging.INFO, logger="anthropic"):
        logging.getLogger("anthropic._base_client").info("Retrying request to /v1/messages")
    (record,) = caplog.records
    assert not hasattr(record, "run_id")
