"""AnthropicModel streaming, settings and prompt caching against the Messages API stand-in."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import pytest

from regiment._json import UNPARSED_ARGUMENTS
from regiment.errors import ConfigError, ModelAPIError, ModelConnectionError
from regiment.models import (
    AnthropicModel,
    Message,
    ModelRequest,
    ModelSettings,
    TextPartDelta,
    ThinkingPart,
    ToolCallPartDelta,
    ToolResultPart,
    Usage,
)
from regiment.tools import ToolDefinition

from .messages_api import Block, message, message_events
from .standin import Collected as Pieces
from .standin import Reply, StandIn, half_read_body, serve

pytestmark = pytest.mark.anyio

WEATHER = ToolDefinition(
    name="get_weather",
    description="Current weather for a city.",
    input_schema={"type": "object", "properties": {"city": {"type": "string"}}},
)
TOOL_USE: Block = {
    "type": "tool_use",
    "id": "toolu_1",
    "name": "get_weather",
    "input": {"city": "Oslo"},
}


@pytest.fixture
async def api() -> AsyncIterator[StandIn]:
    error_body: dict[str, object] = {
        "type": "error",
        "error": {"type": "api_error", "message": "nothing queued"},
    }
    async for server in serve(Reply(500, error_body, {"x-should-retry": "false"})):
        yield server


def model_for(api: StandIn, **options: object) -> AnthropicModel:
    return AnthropicModel("claude-test-1", api_key="k", base_url=api.base_url, **options)  # type: ignore[arg-type]


def ask(text: str = "Weather in Oslo?", **fields: object) -> ModelRequest:
    return ModelRequest(messages=(Message.user(text),), **fields)  # type: ignore[arg-type]


class Collected(Pieces):
    def text(self, index: int) -> str:
        return "".join(
            d.text for d in self.deltas if isinstance(d, TextPartDelta) and d.index == index
        )

    def arguments(self, index: int) -> str:
        return "".join(
            d.arguments
            for d in self.deltas
            if isinstance(d, ToolCallPartDelta) and d.index == index
        )


async def test_thinking_is_kept_and_sent_back_with_the_conversation(api: StandIn) -> None:
    thinking: Block = {"type": "thinking", "thinking": "Oslo, so snow.", "signature": "sig1"}
    api.queue(
        message(
            [thinking, {"type": "text", "text": "Checking."}, TOOL_USE], stop_reason="tool_use"
        ),
        message([{"type": "text", "text": "Snow."}]),
    )
    sink = Collected()
    settings = ModelSettings(max_tokens=4000, thinking_budget=1024)
    first = ask(tools=(WEATHER,), settings=settings)
    async with model_for(api) as model:
        response = await model.stream(first, sink)
        assert response.parts[0] == ThinkingPart(thinking="Oslo, so snow.", signature="sig1")
        assert response.text == "Checking." == sink.text(1)  # thinking is part 0, not streamed
        assert {d.index for d in sink.deltas} == {1, 2}
        results = Message.tool_results((ToolResultPart(call_id="toolu_1", content="snow"),))
        follow_up = ModelRequest(
            messages=(*first.messages, response.to_message(), results),
            tools=(WEATHER,),
            settings=settings,
        )
        await model.complete(follow_up)
    assert api.requests[0].body["thinking"] == {"type": "enabled", "budget_tokens": 1024}
    sent_back = api.requests[1].body["messages"][1]["content"]
    assert sent_back[0] == {"type": "thinking", "thinking": "Oslo, so snow.", "signature": "sig1"}
    assert [block["type"] for block in sent_back] == ["thinking", "text", "tool_use"]


async def test_cache_tokens_are_read_from_the_stream(api: StandIn) -> None:
    api.queue(
        message(
            [{"type": "text", "text": "ok"}],
            cache_read_input_tokens=900,
            cache_creation_input_tokens=120,
        )
    )
    async with model_for(api) as model:
        response = await model.complete(ask())
    assert response.usage == Usage(
        input_tokens=11, output_tokens=7, cache_read_tokens=900, cache_write_tokens=120
    )


async def test_a_stream_that_ends_early_without_message_stop_is_an_error(api: StandIn) -> None:
    reply = message([{"type": "text", "text": "Half a reply"}])
    reply.events = (reply.events or [])[:-2]  # no message_delta, no message_stop
    api.queue(reply, reply, reply)
    sink = Collected()
    async with model_for(api) as model:
        with pytest.raises(ModelConnectionError, match="ended before its message_stop") as caught:
            await model.stream(ask(), sink)  # made again, its handed-out text void
    assert "made 3 times" in str(caught.value)
    assert len(api.requests) == 3
    assert [type(d).__name__ for d in sink.deltas].count("StreamRestart") == 2


@half_read_body
async def test_an_error_event_mid_stream_keeps_its_type(api: StandIn) -> None:
    reply = message([{"type": "text", "text": "Starting to answer"}])
    failure = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    reply.events = [*(reply.events or [])[:4], ("error", json.dumps(failure))]
    api.queue(reply, reply, reply)  # made again twice (the text so far void)
    async with model_for(api) as model:
        with pytest.raises(ModelAPIError) as caught:
            await model.stream(ask(), Collected())
    assert caught.value.error_type == "overloaded_error"
    assert "Overloaded" in str(caught.value)
    assert "mid-stream" in str(caught.value)
    assert len(api.requests) == 3


@half_read_body
@pytest.mark.parametrize("retries", [0, 1])
async def test_an_error_event_before_message_start_is_not_charged(
    api: StandIn, retries: int, caplog: pytest.LogCaptureFixture
) -> None:
    """An error event in place of the message is the streamed form of an error status
    (a 529), which the API does not bill: it was charged an estimate of the input."""
    answer = message([{"type": "text", "text": "Snow."}])
    failure = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    api.queue(Reply(200, answer.body, answer.headers, events=[("error", json.dumps(failure))]))
    api.queue(answer)
    async with model_for(api, max_retries=retries) as model:
        if retries == 0:
            with pytest.raises(ModelAPIError, match="Overloaded") as caught:
                await model.complete(ask())
            assert caught.value.usage is None
            assert not caught.value.usage_estimated
        else:
            response = await model.complete(ask())
            assert response.usage == Usage(input_tokens=11, output_tokens=7)  # the answer's
            assert not response.usage_estimated
    assert not [r for r in caplog.records if "estimate" in r.getMessage()]


# On trio, the SDK's SSE generators that a JSON error leaves half-read are only
# closed by the garbage collector, and trio warns about that; the connection
# itself is closed by AnthropicModel (the stand-in sees no stuck request).
@pytest.mark.parametrize(
    "raw",
    [
        b'event: message_start\ndata: {"type": "message_start", "message": {oops\n\n',
        b'event: content_block_delta\ndata: {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "x"}}\n\n',
    ],
    ids=["bad-json", "delta-before-message-start"],
)
@pytest.mark.filterwarnings(
    "ignore:Async generator 'anthropic._streaming.:ResourceWarning",
    "ignore::pytest.PytestUnraisableExceptionWarning",
)
async def test_malformed_stream_events_are_a_clear_error(api: StandIn, raw: bytes) -> None:
    api.queue(Reply(200, {}, raw=raw))
    async with model_for(api) as model:
        with pytest.raises(ModelAPIError, match="could not be read"):
            await model.complete(ask())
    assert len(api.requests) == 1


async def test_settings_reach_the_wire_and_role_settings_win(api: StandIn) -> None:
    api.queue(message([{"type": "text", "text": "ok"}]))
    defaults = ModelSettings(max_tokens=8000, temperature=0.9, top_p=0.5, extra={"top_k": 5})
    role = ModelSettings(
        temperature=0.1,
        stop_sequences=("STOP",),
        timeout=12.5,
        thinking_budget=2048,
        extra={"metadata": {"user_id": "u1"}},
    )
    async with model_for(api, settings=defaults) as model:
        await model.complete(ask(max_tokens=100, settings=role))
    sent = api.requests[0]
    body = sent.body
    assert (body["max_tokens"], body["temperature"], body["top_p"]) == (8000, 0.1, 0.5)
    assert body["stop_sequences"] == ["STOP"]
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 2048}
    assert (body["top_k"], body["metadata"]) == (5, {"user_id": "u1"})
    assert sent.headers["x-stainless-timeout"] == "12.5"


async def test_a_thinking_budget_at_or_above_max_tokens_is_refused(api: StandIn) -> None:
    async with model_for(api) as model:
        with pytest.raises(ConfigError, match="thinking_budget"):
            await model.complete(ask(max_tokens=2000, settings=ModelSettings(thinking_budget=2048)))
    assert api.requests == []


def test_message_events_round_trip() -> None:
    # The stand-in's stream form of a body carries what the body says.
    events = message_events(
        {
            "id": "m",
            "type": "message",
            "role": "assistant",
            "model": "x",
            "content": [],
            "stop_reason": "end_turn",
            "stop_sequence": None,
            "usage": {"input_tokens": 1, "output_tokens": 2},
        }
    )
    assert [name for name, _ in events] == [
        "message_start",
        "ping",
        "message_delta",
        "message_stop",
    ]


async def test_redacted_thinking_goes_back_as_it_came(api: StandIn) -> None:
    redacted: Block = {"type": "redacted_thinking", "data": "EncryptedBlob=="}
    api.queue(
        message([redacted, {"type": "text", "text": "Hi."}]),
        message([{"type": "text", "text": "Bye."}]),
    )
    async with model_for(api) as model:
        response = await model.complete(ask())
        assert response.parts[0] == ThinkingPart(redacted="EncryptedBlob==")
        assert response.text == "Hi."
        messages = (*ask().messages, response.to_message(), Message.user("again"))
        await model.complete(ModelRequest(messages=messages))
    sent_back = api.requests[1].body["messages"][1]["content"]
    assert sent_back[0] == {"type": "redacted_thinking", "data": "EncryptedBlob=="}


async def test_streamed_tool_arguments_that_are_not_json_go_back_to_the_model(
    api: StandIn,
) -> None:
    # The SDK's message stream gave up on the whole reply (a ValueError, reported as
    # "could not be read ... check base_url") when a call's streamed JSON did not parse.
    second = {**TOOL_USE, "id": "toolu_2", "input": {"city": "Bergen"}}
    reply = message([{"type": "text", "text": "Both."}, TOOL_USE, second], stop_reason="tool_use")
    halves = ["{'city': ", "'Oslo'}"]  # what the model wrote: not JSON
    events = []
    for name, data in reply.events or []:
        event = json.loads(data)
        if event.get("index") == 1 and event["type"] == "content_block_delta":
            event["delta"]["partial_json"] = halves.pop(0)
        events.append((name, json.dumps(event)))
    reply.events = events
    api.queue(reply)
    sink = Collected()
    async with model_for(api) as model:
        response = await model.stream(ask(tools=(WEATHER,)), sink)
    first, then = response.tool_calls
    assert first.arguments == {UNPARSED_ARGUMENTS: "{'city': 'Oslo'}"}
    assert sink.arguments(1) == "{'city': 'Oslo'}"
    assert then.arguments == {"city": "Bergen"}
    assert (response.text, response.stop_reason) == ("Both.", "tool_use")


async def test_a_tool_call_whose_input_comes_whole_at_its_start_is_kept(api: StandIn) -> None:
    # A proxy may give the input in content_block_start and stream no input_json_delta;
    # the stream reader must keep it (as the SDK's message stream did).
    reply = message([TOOL_USE], stop_reason="tool_use")
    events = []
    for name, data in reply.events or []:
        event = json.loads(data)
        if event["type"] == "content_block_delta":
            continue
        if event["type"] == "content_block_start":
            event["content_block"]["input"] = TOOL_USE["input"]
        events.append((name, json.dumps(event)))
    reply.events = events
    api.queue(reply)
    async with model_for(api) as model:
        response = await model.complete(ask(tools=(WEATHER,)))
    (call,) = response.tool_calls
    assert call.arguments == {"city": "Oslo"}
