"""AnthropicModel against a loopback stand-in that speaks the Messages API wire format.

The stand-in is a tiny HTTP/1.1 server on 127.0.0.1 run by the test's own task
group: it records every request and answers with the replies the test queued.
It ignores ``Authorization`` / ``x-api-key`` and ``anthropic-version``.

The SDK runs on trio as well as asyncio (it sleeps with ``anyio.sleep`` and
its transport picks the trio backend), so these tests run on both backends.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anthropic
import pytest
from opentelemetry.sdk.trace import TracerProvider

from regiment.errors import ConfigError, ModelAPIError, ModelConnectionError
from regiment.models import (
    AnthropicModel,
    Message,
    Model,
    ModelRequest,
    ModelSettings,
    ToolCallPart,
    ToolResultPart,
    Usage,
)
from regiment.tools import ToolDefinition

from .messages_api import Block, error, message
from .standin import Reply, StandIn, serve

pytestmark = pytest.mark.anyio

WEATHER = ToolDefinition(
    name="get_weather",
    description="Current weather for a city.",
    input_schema={
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
    },
)


@pytest.fixture(params=["stream", "plain"])
async def api(request: pytest.FixtureRequest) -> AsyncIterator[StandIn]:
    """A Messages API stand-in; every test using it runs streamed and plain."""
    error = {"type": "api_error", "message": "the stand-in had no reply queued"}
    no_reply = Reply(500, {"type": "error", "error": error}, {"x-should-retry": "false"})
    async for server in serve(no_reply):
        server.streaming = request.param == "stream"
        yield server


def model_for(
    api: StandIn, *, max_retries: int = 2, sdk_tracing: bool = False, **options: Any
) -> AnthropicModel:
    return AnthropicModel(
        "claude-test-1",
        api_key="test-key",
        base_url=api.base_url,
        max_retries=max_retries,
        sdk_tracing=sdk_tracing,
        stream=api.streaming,
        **options,
    )


def ask(text: str) -> ModelRequest:
    return ModelRequest(messages=(Message.user(text),))


async def test_request_shape(api: StandIn) -> None:
    api.queue(message([{"type": "text", "text": "Sunny."}]))
    request = ModelRequest(
        messages=(Message.user("Weather in Oslo?"),),
        system="You are terse.",
        tools=(WEATHER,),
        tool_choice="any",
        max_tokens=300,
        temperature=0.25,
        stop_sequences=("END",),
    )
    async with model_for(api) as model:
        response = await model.complete(request)

    (sent,) = api.requests
    assert (sent.method, sent.path) == ("POST", "/v1/messages")
    ephemeral = {"type": "ephemeral"}  # prompt caching is on by default
    assert sent.body == {
        "model": "claude-test-1",
        "max_tokens": 300,
        "system": [{"type": "text", "text": "You are terse.", "cache_control": ephemeral}],
        "messages": [{"role": "user", "content": [{"type": "text", "text": "Weather in Oslo?"}]}],
        "tools": [
            {
                "name": "get_weather",
                "description": "Current weather for a city.",
                "input_schema": WEATHER.input_schema,
                "cache_control": ephemeral,
            }
        ],
        "tool_choice": {"type": "any"},
        "temperature": 0.25,
        "stop_sequences": ["END"],
        **({"stream": True} if api.streaming else {}),
    }
    assert response.text == "Sunny."
    assert (response.stop_reason, response.model, response.response_id) == (
        "end_turn",
        "claude-test-1",
        "msg_0123",
    )


async def test_prompt_caching_can_be_turned_off(api: StandIn) -> None:
    api.queue(message([{"type": "text", "text": "ok"}]))
    request = ModelRequest(messages=(Message.user("hi"),), system="Be brief.", tools=(WEATHER,))
    async with model_for(api, prompt_caching=False) as model:
        await model.complete(request)
    body = api.requests[0].body
    assert body["system"] == "Be brief."
    assert "cache_control" not in body["tools"][0]


async def test_unset_options_are_left_out(api: StandIn) -> None:
    api.queue(message([{"type": "text", "text": "hi"}]))
    async with model_for(api) as model:
        await model.complete(ask("hello"))
    assert set(api.requests[0].body) - {"stream"} == {"model", "max_tokens", "messages"}


async def test_tool_use_round_trip(api: StandIn) -> None:
    tool_use: Block = {
        "type": "tool_use",
        "id": "toolu_1",
        "name": "get_weather",
        "input": {"city": "Oslo"},
    }
    api.queue(
        message([{"type": "text", "text": "Checking."}, tool_use], stop_reason="tool_use"),
        message([{"type": "text", "text": "It is 4 degrees."}]),
    )
    first = ModelRequest(messages=(Message.user("Weather in Oslo?"),), tools=(WEATHER,))
    async with model_for(api) as model:
        response = await model.complete(first)
        assert response.stop_reason == "tool_use"
        assert response.text == "Checking."
        assert response.tool_calls == (
            ToolCallPart(id="toolu_1", name="get_weather", arguments={"city": "Oslo"}),
        )
        results = (
            ToolResultPart(call_id="toolu_1", content="4 C, rain"),
            ToolResultPart(call_id="toolu_2", content="no such city", is_error=True),
        )
        messages = (*first.messages, response.to_message(), Message.tool_results(results))
        final = await model.complete(ModelRequest(messages=messages, tools=(WEATHER,)))

    assert final.text == "It is 4 degrees."
    sent = api.requests[1].body["messages"]
    assert sent[1] == {
        "role": "assistant",
        "content": [{"type": "text", "text": "Checking."}, tool_use],
    }
    assert sent[2] == {
        "role": "user",
        "content": [
            {"type": "tool_result", "tool_use_id": "toolu_1", "content": "4 C, rain"},
            {
                "type": "tool_result",
                "tool_use_id": "toolu_2",
                "content": "no such city",
                "is_error": True,
                # the conversation is under way: the next call reads it from the cache
                "cache_control": {"type": "ephemeral"},
            },
        ],
    }
    assert "cache_control" not in json.dumps(api.requests[0].body["messages"])  # one message


async def test_usage_is_mapped(api: StandIn) -> None:
    api.queue(
        message(
            [{"type": "text", "text": "ok"}],
            cache_read_input_tokens=100,
            cache_creation_input_tokens=40,
        )
    )
    async with model_for(api) as model:
        response = await model.complete(ask("hi"))
    assert response.usage == Usage(
        input_tokens=11, output_tokens=7, cache_read_tokens=100, cache_write_tokens=40
    )
    assert response.usage.total_tokens == 158


async def test_overloaded_then_ok_is_retried_by_the_sdk(api: StandIn) -> None:
    # retry-after-ms makes the SDK wait 1 ms instead of its 0.5 s backoff; it must
    # be above zero, since the SDK ignores a wait of 0 and backs off as usual.
    api.queue(
        error(529, "overloaded_error", "Overloaded", **{"retry-after-ms": "1"}),
        message([{"type": "text", "text": "made it"}]),
    )
    async with model_for(api) as model:
        response = await model.complete(ask("hi"))
    assert response.text == "made it"
    assert len(api.requests) == 2
    assert api.requests[0].body == api.requests[1].body


async def test_overloaded_after_all_retries_keeps_status_and_type(api: StandIn) -> None:
    overloaded = error(529, "overloaded_error", "Overloaded", **{"retry-after-ms": "1"})
    api.queue(overloaded, overloaded)
    async with model_for(api, max_retries=1) as model:
        with pytest.raises(ModelAPIError) as caught:
            await model.complete(ask("hi"))
    assert (caught.value.status_code, caught.value.error_type) == (529, "overloaded_error")
    assert caught.value.request_id == "req_529"
    assert len(api.requests) == 2


async def test_bad_request_is_translated_with_request_id_and_type(api: StandIn) -> None:
    api.queue(error(400, "invalid_request_error", "max_tokens: 999999 > 64000"))
    async with model_for(api) as model:
        with pytest.raises(ModelAPIError) as caught:
            await model.complete(ask("hi"))
    err = caught.value
    assert (err.status_code, err.error_type, err.request_id) == (
        400,
        "invalid_request_error",
        "req_400",
    )
    assert isinstance(err.__cause__, anthropic.BadRequestError)
    assert "max_tokens: 999999 > 64000" in str(err)
    assert "req_400" in str(err)
    assert len(api.requests) == 1  # a 400 is not retried


async def test_an_error_without_a_request_id_does_not_print_none(api: StandIn) -> None:
    # A proxy or a stand-in server sends no request-id header: the error said "request id None".
    api.queue(Reply(404, {}, raw=b"404 page not found", content_type="text/plain"))
    async with model_for(api) as model:
        with pytest.raises(ModelAPIError) as caught:
            await model.complete(ask("hi"))
    assert caught.value.request_id is None
    assert "(no request id)" in str(caught.value)


async def test_a_404_names_the_model_or_the_base_url_as_the_404_says(api: StandIn) -> None:
    """The API's own 404 (not_found_error) is about the model; any other is a request
    that went astray, as a base_url ending in /v1 sends it to /v1/v1/messages: that one
    said "check the model name" too."""
    api.queue(error(404, "not_found_error", "model: claude-test-1"))
    api.queue(Reply(404, {"detail": "Not Found"}))
    async with model_for(api) as model:
        with pytest.raises(ModelAPIError, match="check the model name") as unknown:
            await model.complete(ask("hi"))
    astray = AnthropicModel(
        "claude-test-1", api_key="k", base_url=f"{api.base_url}/v1", stream=api.streaming
    )
    async with astray:
        with pytest.raises(ModelAPIError, match="check base_url") as caught:
            await astray.complete(ask("hi"))
    assert unknown.value.permanent
    assert caught.value.permanent
    assert api.requests[-1].path == "/v1/v1/messages"
    assert "no Messages API answered at /v1/v1/messages" in str(caught.value)
    assert "leave its /v1 out" in str(caught.value)
    assert "model name" not in str(caught.value)


async def test_a_plain_call_the_sdk_will_not_make_is_a_config_error(api: StandIn) -> None:
    """The anthropic SDK refuses a plain call whose max_tokens may take over 10 minutes
    with a bare ValueError, which left the model as a crash of "your own" model."""
    long = ModelRequest(messages=(Message.user("hi"),), settings=ModelSettings(max_tokens=64000))
    async with model_for(api) as model:
        if api.streaming:  # a stream may take as long as it needs
            api.queue(message([{"type": "text", "text": "ok"}]))
            assert (await model.complete(long)).text == "ok"
            return
        with pytest.raises(ConfigError, match=r"stream=False\) cannot ask for max_tokens=64000"):
            await model.complete(long)
    assert api.requests == []  # nothing was sent


async def test_connection_refused_is_translated(refused_port: int) -> None:
    port = refused_port
    # No retries: the SDK backs off 0.5 s, 1 s, ... between connection attempts,
    # and there is no response header to shorten that.
    model = AnthropicModel(
        "claude-test-1", api_key="k", base_url=f"http://127.0.0.1:{port}", max_retries=0
    )
    async with model:
        with pytest.raises(ModelConnectionError) as caught:
            await model.complete(ask("hi"))
    assert isinstance(caught.value.__cause__, anthropic.APIConnectionError)
    assert f"127.0.0.1:{port}" in str(caught.value)


async def test_no_sdk_span_or_traceparent_by_default(api: StandIn) -> None:
    api.queue(*(message([{"type": "text", "text": "ok"}]) for _ in range(2)))
    tracer = TracerProvider().get_tracer("test")
    with tracer.start_as_current_span("chat claude-test-1") as span:
        async with model_for(api) as quiet:
            await quiet.complete(ask("hi"))
        async with model_for(api, sdk_tracing=True) as traced:
            await traced.complete(ask("hi"))
    assert "traceparent" not in api.requests[0].headers
    trace_id = f"{span.get_span_context().trace_id:032x}"
    assert api.requests[1].headers["traceparent"].split("-")[1] == trace_id


async def test_a_given_client_is_used_and_left_open(api: StandIn) -> None:
    api.queue(message([{"type": "text", "text": "ok"}]))
    client = anthropic.AsyncAnthropic(api_key="k", base_url=api.base_url, open_telemetry=False)
    async with AnthropicModel("claude-test-1", client=client) as model:
        assert (await model.complete(ask("hi"))).text == "ok"
    assert not client.is_closed()
    await client.close()


def test_is_a_model_named_after_its_id() -> None:
    model = AnthropicModel("claude-sonnet-4-5", api_key="k")
    assert isinstance(model, Model)
    assert (model.name, model.provider) == ("claude-sonnet-4-5", "anthropic")


def test_client_and_client_options_conflict() -> None:
    client = anthropic.AsyncAnthropic(api_key="k")
    with pytest.raises(ConfigError, match="ready client and client options"):
        AnthropicModel("claude-test-1", client=client, max_retries=5)


def test_missing_credentials_is_a_config_error(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv("ANTHROPIC_CONFIG_DIR", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))  # no profile on disk either
    with pytest.raises(ConfigError, match="ANTHROPIC_API_KEY"):
        AnthropicModel("claude-test-1")


@pytest.mark.parametrize("given", [[1, 2], 4200], ids=["list", "number"])
async def test_tool_input_that_is_not_an_object_goes_back_to_the_model(
    api: StandIn, given: object
) -> None:
    # A server that is not Anthropic's may send one; the call is kept for the tool's
    # validation to hand back to the model, as the OpenAI adapter does with bad JSON.
    tool_use: Block = {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": given}
    api.queue(message([tool_use], stop_reason="tool_use"))
    async with model_for(api) as model:
        response = await model.complete(ask("Weather in Oslo?"))
    assert response.tool_calls == (
        ToolCallPart(
            id="toolu_1", name="get_weather", arguments={"_unparsed_arguments": json.dumps(given)}
        ),
    )


async def test_an_empty_reply_re_sent_with_a_re_prompt_is_left_out(api: StandIn) -> None:
    """The planner asks again after an empty reply, sending it back: the Messages API
    refuses a message with no content ("all messages must have non-empty content"), so
    the empty assistant turn is left out and the two user turns go as they are (the API
    joins consecutive turns of one role)."""
    api.queue(message([{"type": "text", "text": '{"steps": []}'}]))
    conversation = (
        Message.user("Plan the goal."),
        Message.assistant(""),
        Message.user("Your reply was empty: answer with the plan as JSON."),
    )
    async with model_for(api) as model:
        await model.complete(ModelRequest(messages=conversation))
    sent = api.requests[0].body["messages"]
    assert [m["role"] for m in sent] == ["user", "user"]
    assert all(m["content"] for m in sent)
