"""OpenAIModel against the stand-in speaking the Chat Completions wire format, streamed and plain."""

from __future__ import annotations

import sys

import openai
import pytest
from opentelemetry.sdk.trace import TracerProvider

from regiment.errors import ConfigError, ModelAPIError, ModelConnectionError
from regiment.hierarchy._model_call import ModelCaller
from regiment.models import (
    Message,
    Model,
    ModelRequest,
    ModelSettings,
    OpenAIModel,
    TextPartDelta,
    ToolCallPart,
    ToolCallPartDelta,
    ToolResultPart,
    Usage,
)
from regiment.telemetry import SpanCollector, Telemetry, semconv
from regiment.tools import ToolDefinition

from .chat_api import (
    api_streamed_and_plain,  # noqa: F401 (the api fixture)
    completion,
    error,
)
from .standin import Collected as Pieces
from .standin import Reply, StandIn

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
CALL = ("call_1", "get_weather", '{"city": "Oslo"}')


def model_for(api: StandIn, *, max_retries: int = 2, **options: object) -> OpenAIModel:
    return OpenAIModel(
        "gpt-test-1",
        api_key="test-key",
        base_url=f"{api.base_url}/v1",
        max_retries=max_retries,
        stream=api.streaming,
        **options,  # type: ignore[arg-type]
    )


def ask(text: str = "Weather in Oslo?", **fields: object) -> ModelRequest:
    return ModelRequest(messages=(Message.user(text),), **fields)  # type: ignore[arg-type]


class Collected(Pieces):
    def joined(self, index: int) -> str:
        return "".join(
            d.text if isinstance(d, TextPartDelta) else d.arguments
            for d in self.deltas
            if isinstance(d, TextPartDelta | ToolCallPartDelta) and d.index == index
        )


async def test_request_shape(api: StandIn) -> None:
    api.queue(completion("Sunny."))
    request = ask(
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
    assert (sent.method, sent.path) == ("POST", "/v1/chat/completions")
    streamed = {"stream": True, "stream_options": {"include_usage": True}}
    assert sent.body == {
        "model": "gpt-test-1",
        "messages": [
            {"role": "system", "content": "You are terse."},
            {"role": "user", "content": "Weather in Oslo?"},
        ],
        "tools": [
            {
                "type": "function",
                "function": {
                    "name": "get_weather",
                    "description": "Current weather for a city.",
                    "parameters": WEATHER.input_schema,
                },
            }
        ],
        "tool_choice": "required",
        "max_completion_tokens": 300,
        "temperature": 0.25,
        "stop": ["END"],
        **(streamed if api.streaming else {}),
    }
    assert (response.text, response.stop_reason, response.model, response.response_id) == (
        "Sunny.",
        "stop",
        "gpt-test-1",
        "chatcmpl-0123",
    )


async def test_a_compatible_server_gets_max_tokens_and_needs_no_key(
    api: StandIn, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    api.queue(completion("ok"))
    model = OpenAIModel(
        "llama3.1", base_url=f"{api.base_url}/v1", compatible=True, stream=api.streaming
    )
    async with model:
        await model.complete(ask(max_tokens=64))
    body = api.requests[0].body
    assert body["max_tokens"] == 64
    assert "max_completion_tokens" not in body


async def test_tool_call_round_trip(api: StandIn) -> None:
    api.queue(completion("Checking.", CALL, finish="tool_calls"), completion("It is 4 degrees."))
    first = ask(tools=(WEATHER,))
    async with model_for(api) as model:
        response = await model.complete(first)
        assert response.stop_reason == "tool_calls"
        assert response.text == "Checking."
        assert response.tool_calls == (
            ToolCallPart(id="call_1", name="get_weather", arguments={"city": "Oslo"}),
        )
        results = (
            ToolResultPart(call_id="call_1", content="4 C, rain"),
            ToolResultPart(call_id="call_2", content="no such city", is_error=True),
        )
        messages = (*first.messages, response.to_message(), Message.tool_results(results))
        final = await model.complete(ModelRequest(messages=messages, tools=(WEATHER,)))
    assert final.text == "It is 4 degrees."
    sent = api.requests[1].body["messages"]
    assert sent[1] == {
        "role": "assistant",
        "content": "Checking.",
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "get_weather", "arguments": '{"city": "Oslo"}'},
            }
        ],
    }
    assert sent[2:] == [
        {"role": "tool", "tool_call_id": "call_1", "content": "4 C, rain"},
        {"role": "tool", "tool_call_id": "call_2", "content": "Error: no such city"},
    ]


async def test_usage_counts_cached_prompt_tokens_apart(api: StandIn) -> None:
    api.queue(completion("ok", prompt=1000, output=20, cached=800))
    async with model_for(api) as model:
        response = await model.complete(ask())
    assert response.usage == Usage(input_tokens=200, output_tokens=20, cache_read_tokens=800)


async def test_a_refusal_is_a_refused_reply(api: StandIn) -> None:
    # Chat Completions says a model declined (structured outputs) in a refusal field,
    # with finish_reason stop: read as an empty reply, a synthesizer's refusal was a
    # completed run whose answer was '' (or answers asked for again, never valid).
    said = "I'm sorry, I cannot help with that."
    api.queue(completion(None, refusal=said))
    async with model_for(api) as model:
        response = await model.complete(ask())
    assert response.refused
    assert (response.stop_reason, response.text) == ("refusal", said)


@pytest.mark.parametrize(
    "raw",
    [
        "{city: Oslo",
        # nested past Python's recursion limit: was a RecursionError that failed the call
        '{"city": ' + "[" * 100_000 + "]" * 100_000 + "}",
    ],
)
async def test_unparseable_tool_arguments_go_back_to_the_model(api: StandIn, raw: str) -> None:
    api.queue(completion(None, ("call_9", "get_weather", raw), finish="tool_calls"))
    async with model_for(api) as model:
        response = await model.complete(ask(tools=(WEATHER,)))
    assert response.tool_calls[0].arguments == {"_unparsed_arguments": raw}


async def test_unparseable_tool_arguments_are_sent_back_as_the_model_wrote_them(
    api: StandIn,
) -> None:
    # They went back wrapped as {"_unparsed_arguments": ...}, a key the model never wrote.
    raw = "{city: Oslo"
    api.queue(completion(None, ("call_9", "get_weather", raw), finish="tool_calls"))
    api.queue(completion("Sorry."))
    first = ask(tools=(WEATHER,))
    async with model_for(api) as model:
        response = await model.complete(first)
        result = ToolResultPart(call_id="call_9", content="not JSON", is_error=True)
        messages = (*first.messages, response.to_message(), Message.tool_results((result,)))
        await model.complete(ModelRequest(messages=messages, tools=(WEATHER,)))
    (call,) = api.requests[1].body["messages"][1]["tool_calls"]
    assert call["function"] == {"name": "get_weather", "arguments": raw}


async def test_an_error_status_after_retries_is_translated(api: StandIn) -> None:
    api.queue(error(400, "invalid_request_error", "max_completion_tokens is too large"))
    async with model_for(api) as model:
        with pytest.raises(ModelAPIError) as caught:
            await model.complete(ask())
    err = caught.value
    assert (err.status_code, err.error_type, err.request_id) == (
        400,
        "invalid_request_error",
        "req_400",
    )
    assert isinstance(err.__cause__, openai.BadRequestError)
    assert "max_completion_tokens is too large" in str(err)
    assert len(api.requests) == 1


async def test_a_quota_used_up_is_permanent_and_says_so(api: StandIn) -> None:
    # OpenAI answers 429 for an account out of credit too: no retry (and no replan) helps.
    text = "You exceeded your current quota, please check your plan and billing details."
    api.queue(error(429, "insufficient_quota", text, code="insufficient_quota"))
    async with model_for(api, max_retries=0) as model:
        with pytest.raises(ModelAPIError) as caught:
            await model.complete(ask())
    assert (caught.value.status_code, caught.value.permanent) == (429, True)
    assert str(caught.value).endswith("the account's quota is used up; check its plan and billing")


async def test_a_quota_used_up_is_not_retried_by_the_sdk(api: StandIn) -> None:
    # The SDK retries every 429 (with a back-off of seconds); this one never passes.
    text = "You exceeded your current quota, please check your plan and billing details."
    for _ in range(3):  # what a retry would get
        api.queue(error(429, "insufficient_quota", text, code="insufficient_quota"))
    async with model_for(api, max_retries=2) as model:
        with pytest.raises(ModelAPIError) as caught:
            await model.complete(ask())
    assert (caught.value.status_code, caught.value.permanent) == (429, True)
    assert len(api.requests) == 1


async def test_a_rate_limit_is_still_retried(api: StandIn) -> None:
    wait = {"retry-after-ms": "5"}  # the SDK's back-off, kept short
    api.queue(error(429, "rate_limit_exceeded", "Rate limit reached", **wait))
    api.queue(completion("ok"))
    async with model_for(api, max_retries=2) as model:
        response = await model.complete(ask())
    assert (response.text, len(api.requests)) == ("ok", 2)


async def test_settings_reach_the_wire(api: StandIn) -> None:
    api.queue(completion("ok"))
    defaults = ModelSettings(max_tokens=900, temperature=1.5, extra={"seed": 7})
    role = ModelSettings(
        top_p=0.5, timeout=9.5, thinking_budget=2048, extra={"reasoning_effort": "low"}
    )
    async with model_for(api, settings=defaults) as model:
        await model.complete(ask(settings=role))
    sent = api.requests[0]
    assert (sent.body["max_completion_tokens"], sent.body["temperature"], sent.body["top_p"]) == (
        900,
        1.5,
        0.5,
    )
    assert (sent.body["seed"], sent.body["reasoning_effort"]) == (7, "low")
    assert "thinking" not in sent.body  # Anthropic's; not sent


async def test_the_timeout_setting_applies_per_request(api: StandIn) -> None:
    api.queue(Reply(200, {}, hold=True))  # never answers
    async with model_for(api, max_retries=0) as model:
        with pytest.raises(ModelConnectionError, match=r"did not answer in 0\.2 s"):
            await model.complete(ask(settings=ModelSettings(timeout=0.2)))


async def test_the_chat_span_names_openai_as_the_provider(api: StandIn) -> None:
    api.queue(completion("ok", prompt=100, output=5, cached=60))
    collector = SpanCollector()
    provider = TracerProvider()
    provider.add_span_processor(collector)
    async with model_for(api) as model:
        await ModelCaller(model, "billing", Telemetry(provider)).call(ask())
    (span,) = collector.spans()
    attributes = dict(span.attributes or {})
    assert span.name == "chat gpt-test-1"
    assert attributes[semconv.GEN_AI_PROVIDER_NAME] == "openai"
    assert attributes[semconv.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS] == 60
    assert attributes[semconv.GEN_AI_USAGE_INPUT_TOKENS] == 100


async def test_connection_refused_is_translated(refused_port: int) -> None:
    port = refused_port
    async with OpenAIModel(
        "gpt-test-1", api_key="k", base_url=f"http://127.0.0.1:{port}/v1", max_retries=0
    ) as model:
        with pytest.raises(ModelConnectionError) as caught:
            await model.complete(ask())
    assert isinstance(caught.value.__cause__, openai.APIConnectionError)
    assert f"127.0.0.1:{port}" in str(caught.value)


def test_is_a_model_that_names_openai() -> None:
    model = OpenAIModel("gpt-4.1", api_key="k")
    assert isinstance(model, Model)
    assert (model.name, model.provider) == ("gpt-4.1", "openai")


def test_missing_key_is_a_config_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(ConfigError, match="OPENAI_API_KEY"):
        OpenAIModel("gpt-4.1")


def test_client_and_client_options_conflict() -> None:
    with pytest.raises(ConfigError, match="ready client and client options"):
        OpenAIModel("gpt-4.1", client=openai.AsyncOpenAI(api_key="k"), max_retries=5)


def test_a_missing_sdk_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    import regiment.models as models

    monkeypatch.delitem(sys.modules, "regiment.models._openai")
    monkeypatch.setitem(sys.modules, "openai", None)  # makes `import openai` fail
    with pytest.raises(ConfigError, match=r"pip install 'regiment\[openai\]'"):
        models.__getattr__("OpenAIModel")


@pytest.mark.parametrize("v1", [True, False], ids=["with-v1", "without-v1"])
async def test_a_404_from_a_base_url_without_v1_says_so(api: StandIn, v1: bool) -> None:
    """Ollama, vLLM and LM Studio answer Chat Completions under /v1; a base_url
    without it gets their plain 404, and the error says where the request went."""
    api.queue(Reply(404, {}, raw=b"404 page not found", content_type="text/plain"))
    base_url = f"{api.base_url}/v1" if v1 else api.base_url
    async with OpenAIModel(
        "llama3.1", base_url=base_url, compatible=True, stream=api.streaming
    ) as model:
        with pytest.raises(ModelAPIError) as caught:
            await model.complete(ask())
    said = str(caught.value)
    assert caught.value.permanent
    assert ("went to /chat/completions, without the /v1" in said) is not v1
    assert "check the model name and base_url" in said
    assert "(no request id)" in said  # such servers send none; it said "request id None"
