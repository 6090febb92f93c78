"""A Messages API server (a proxy, a compatible server) that reports no usage."""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator

import pytest

from regiment.models import AnthropicModel, Message, ModelRequest, estimate_tokens

from .messages_api import message, message_events
from .standin import Reply, StandIn, serve

pytestmark = pytest.mark.anyio


@pytest.fixture(params=["stream", "plain"])
async def api(request: pytest.FixtureRequest) -> AsyncIterator[StandIn]:
    error = {"type": "api_error", "message": "the stand-in had no reply queued"}
    async for server in serve(Reply(500, {"type": "error", "error": error})):
        server.streaming = request.param == "stream"
        yield server


def _without_usage() -> Reply:
    reply = message([{"type": "text", "text": "It is snowing in Oslo."}])
    del reply.body["usage"]
    events = message_events({**reply.body, "usage": {"output_tokens": 9}})
    start = json.loads(events[0][1])
    del start["message"]["usage"]
    events[0] = (events[0][0], json.dumps(start))
    reply.events = events
    return reply


async def test_a_reply_without_usage_is_charged_an_estimate(
    api: StandIn, caplog: pytest.LogCaptureFixture
) -> None:
    # Plain: no usage failed the call as 'a reply that could not be read' (AttributeError).
    # Streamed: its message_start had no input_tokens, and the call was charged 0 input
    # tokens, silently, so token budgets and prices undercounted it.
    api.queue(_without_usage())
    request = ModelRequest(messages=(Message.user("Weather in Oslo? " * 50),))
    async with AnthropicModel(
        "claude-test-1", api_key="k", base_url=api.base_url, stream=api.streaming
    ) as model:
        with caplog.at_level(logging.WARNING, logger="regiment.models"):
            response = await model.complete(request)
    assert response.text == "It is snowing in Oslo."
    assert response.usage_estimated
    assert response.usage.input_tokens == estimate_tokens(request) > 50
    assert response.usage.output_tokens == (9 if api.streaming else estimate_tokens(response))
    (warning,) = [r.getMessage() for r in caplog.records if "usage" in r.getMessage()]
    assert "reported no token usage for model 'claude-test-1'" in warning
    assert "stream_options" not in warning  # a Chat Completions field: no use here
