"""OpenAIModel streams that go wrong: cut short, an error inside, chunks that do not parse."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import pytest

from regiment.errors import ModelAPIError, ModelConnectionError
from regiment.models import Message, ModelRequest, OpenAIModel

from .chat_api import completion, error
from .standin import Collected, Reply, SseEvent, StandIn, half_read_body, serve

pytestmark = pytest.mark.anyio


@pytest.fixture
async def api() -> AsyncIterator[StandIn]:
    async for server in serve(
        error(500, "server_error", "nothing queued", **{"x-should-retry": "false"})
    ):
        yield server


def model_for(api: StandIn) -> OpenAIModel:
    return OpenAIModel("gpt-test-1", api_key="k", base_url=f"{api.base_url}/v1")


def ask() -> ModelRequest:
    return ModelRequest(messages=(Message.user("Weather in Oslo?"),))


async def test_a_stream_without_a_finish_reason_is_an_error(api: StandIn) -> None:
    reply = completion("Half a reply")
    reply.events = [*(reply.events or [])[:3], (None, "[DONE]")]
    api.queue(reply, reply, reply)
    sink = Collected()
    async with model_for(api) as model:
        with pytest.raises(ModelConnectionError, match="ended before its finish_reason") as caught:
            await model.stream(ask(), sink)  # made again, its handed-out text void
    assert "made 3 times" in str(caught.value)
    assert len(api.requests) == 3
    assert [type(d).__name__ for d in sink.deltas].count("StreamRestart") == 2


@half_read_body
async def test_an_error_chunk_mid_stream_keeps_its_type(api: StandIn) -> None:
    reply = completion("Starting to answer")
    failure = {"error": {"message": "The server is overloaded", "type": "server_error"}}
    reply.events = [*(reply.events or [])[:3], (None, json.dumps(failure))]
    reply.headers["x-request-id"] = "req_mid"
    api.queue(reply, reply, reply)  # made again twice (the text so far void)
    async with model_for(api) as model:
        with pytest.raises(ModelAPIError, match="mid-stream") as caught:
            await model.stream(ask(), Collected())
    assert (caught.value.error_type, caught.value.request_id) == ("server_error", "req_mid")
    assert len(api.requests) == 3
    assert "The server is overloaded" in str(caught.value)


@half_read_body
@pytest.mark.parametrize(
    "data",
    ['{"id": "x", "choices": [{"delta": {"content": 5}}]}', "{not json", '["a list"]'],
    ids=["wrong-type", "bad-json", "not-an-object"],
)
async def test_malformed_chunks_are_a_clear_error(api: StandIn, data: str) -> None:
    api.queue(Reply(200, {}, events=[(None, data), (None, "[DONE]")]))
    async with model_for(api) as model:
        with pytest.raises(ModelAPIError, match="could not be read"):
            await model.complete(ask())
    assert len(api.requests) == 1


async def test_a_plain_reply_without_choices_is_a_clear_error(api: StandIn) -> None:
    api.queue(Reply(200, {"id": "x", "object": "chat.completion", "model": "m", "choices": []}))
    async with OpenAIModel(
        "gpt-test-1", api_key="k", base_url=f"{api.base_url}/v1", stream=False
    ) as model:
        with pytest.raises(ModelAPIError) as caught:
            await model.complete(ask())
    # It was "a reply that could not be read (IndexError: list index out of range ...);
    # check base_url points at a Chat Completions server": not what was wrong.
    said = str(caught.value)
    assert (
        'sent a reply with no choices ("choices": [], no request id): the server gave no ' in said
    )
    assert "IndexError" not in said


@pytest.mark.parametrize("with_done", [True, False], ids=["done", "no-done"])
async def test_a_stream_without_choices_is_a_clear_error(api: StandIn, with_done: bool) -> None:
    """Every chunk "choices": [] (a gateway whose upstream failed) is the plain reply's
    error, not retried; it was 'ended before its finish_reason', made three times."""
    empty = {"id": "x", "object": "chat.completion.chunk", "model": "m", "choices": []}
    usage = {"prompt_tokens": 3, "completion_tokens": 0, "total_tokens": 3}
    events: list[SseEvent] = [
        (None, json.dumps(empty)),
        (None, json.dumps({**empty, "usage": usage})),
    ]
    events += [(None, "[DONE]")] if with_done else []
    reply = Reply(200, {}, {"x-request-id": "req_empty"}, events=events)
    api.queue(reply, reply, reply)
    async with model_for(api) as model:
        with pytest.raises(ModelAPIError) as caught:
            await model.complete(ask())
    said = str(caught.value)
    assert (
        'sent a stream with no choices (all "choices": [], request id req_empty): the server '
        "gave no answer; see its logs, or try again"
    ) in said
    assert "finish_reason" not in said
    assert len(api.requests) == 1


async def test_parallel_calls_a_server_gives_one_index_are_kept_apart(api: StandIn) -> None:
    """Servers that give every streamed tool call index 0 (or none): each new id is a
    new call, so two calls do not melt into one with unreadable arguments."""
    reply = completion(None, ("c1", "get_weather", '{"city": "Oslo"}'), ("c2", "get_time", "{}"))
    reply.events = [
        (name, data.replace('"index": 1,', '"index": 0,')) for name, data in reply.events or []
    ]
    api.queue(reply)
    async with model_for(api) as model:
        response = await model.complete(ask())
    assert [(c.id, c.name, c.arguments) for c in response.tool_calls] == [
        ("c1", "get_weather", {"city": "Oslo"}),
        ("c2", "get_time", {}),
    ]


@pytest.mark.parametrize("status", [400, 422])
async def test_a_server_that_refuses_stream_options_is_asked_without(
    api: StandIn, status: int, caplog: pytest.LogCaptureFixture
) -> None:
    """Mistral answers 422 (extra inputs are not permitted) and some Azure deployments 400
    to the stream_options that asks for usage: the call is made again without it, and so
    are the model's later calls (their usage is estimated)."""
    refusal = "body.stream_options.include_usage: Extra inputs are not permitted"
    api.queue(error(status, "invalid_request_error", refusal), completion("Snow."))
    api.queue(completion("More snow."))
    async with model_for(api) as model:
        first = await model.complete(ask())
        second = await model.complete(ask())
    assert (first.text, second.text) == ("Snow.", "More snow.")
    assert [r.body.get("stream_options") for r in api.requests] == [
        {"include_usage": True},
        None,
        None,
    ]
    refused = [r for r in caplog.records if "refused stream_options" in r.getMessage()]
    assert len(refused) == 1
