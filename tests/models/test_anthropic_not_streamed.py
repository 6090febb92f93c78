"""A server that answers a streamed Messages API call with one whole JSON message.

Some servers in front of the API (proxies, gateways, a test's own stand-in) ignore
``"stream": true`` and answer as for a plain call. Issue #4's ``AnthropicModel``
talks to "a local HTTP server ... that speaks the Messages API wire format": such a
reply is a whole answer, read as a plain call's, not a failed call (it was
``ModelAPIError: ... with application/json, not an event stream``).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator

import pytest

from regiment.errors import ModelAPIError
from regiment.models import (
    AnthropicModel,
    Message,
    ModelRequest,
    PartDelta,
    TextPart,
    TextPartDelta,
    ToolCallPart,
    ToolCallPartDelta,
    ToolCallPartStart,
    Usage,
)

from .messages_api import Block, error, message
from .standin import Reply, StandIn, serve

pytestmark = pytest.mark.anyio

TOOL_USE: list[Block] = [
    {"type": "text", "text": "Let me look."},
    {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Oslo"}},
]


@pytest.fixture
async def api() -> AsyncIterator[StandIn]:
    no_reply = Reply(500, {"type": "error", "error": {"type": "api_error", "message": "none"}})
    async for server in serve(no_reply):
        yield server


def _whole(content: list[Block], **usage: int) -> Reply:
    """The message as one JSON body, whatever the request asked for (no events)."""
    streamed = message(content, stop_reason="tool_use", **usage)
    return Reply(200, streamed.body, streamed.headers)


def _ask() -> ModelRequest:
    return ModelRequest(messages=(Message.user("Weather in Oslo?"),))


async def test_a_whole_message_answering_a_streamed_call_is_the_reply(
    api: StandIn, caplog: pytest.LogCaptureFixture
) -> None:
    api.queue(_whole(TOOL_USE, cache_read_input_tokens=3))
    pieces: list[PartDelta] = []

    async def on_delta(delta: PartDelta) -> None:
        pieces.append(delta)

    caplog.set_level(logging.INFO, logger="regiment.models")
    async with AnthropicModel("claude-test-1", api_key="k", base_url=api.base_url) as model:
        response = await model.stream(_ask(), on_delta)
    assert api.requests[0].body["stream"] is True  # asked for a stream; got JSON
    assert response.parts == (
        TextPart(text="Let me look."),
        ToolCallPart(id="toolu_1", name="get_weather", arguments={"city": "Oslo"}),
    )
    assert response.stop_reason == "tool_use"
    assert response.usage == Usage(input_tokens=11, output_tokens=7, cache_read_tokens=3)
    assert pieces == [
        TextPartDelta(index=0, text="Let me look."),
        ToolCallPartStart(index=1, id="toolu_1", name="get_weather"),
        ToolCallPartDelta(index=1, arguments='{"city":"Oslo"}'),
    ]
    (said,) = [r.getMessage() for r in caplog.records if "whole message" in r.getMessage()]
    assert "stream=False" in said
    assert len(api.requests) == 1


async def test_an_overload_then_a_whole_message_is_retried_then_read(api: StandIn) -> None:
    # Issue #4: "a 529 followed by a 200 retried successfully", from a stand-in that
    # answers every call with JSON.
    overloaded = error(529, "overloaded_error", "Overloaded", **{"retry-after-ms": "1"})
    api.queue(overloaded, _whole([{"type": "text", "text": "Snow."}]))
    async with AnthropicModel("claude-test-1", api_key="k", base_url=api.base_url) as model:
        response = await model.complete(_ask())
    assert response.parts == (TextPart(text="Snow."),)
    assert len(api.requests) == 2


@pytest.mark.parametrize(
    "body",
    [
        b'{"type": "error", "error": {"type": "api_error", "message": "x"}}',
        b'{"type": "message", "content": "not a list"}',
        b'{"hello": "world"}',
    ],
)
async def test_json_that_is_no_message_is_still_an_error(api: StandIn, body: bytes) -> None:
    api.queue(Reply(200, {}, {"request-id": "req_bad"}, raw=body, content_type="application/json"))
    async with AnthropicModel("claude-test-1", api_key="k", base_url=api.base_url) as model:
        with pytest.raises(ModelAPIError, match="not an event stream") as caught:
            await model.complete(_ask())
    assert caught.value.request_id == "req_bad"
    assert len(api.requests) == 1
