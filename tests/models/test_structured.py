"""Structured answers (``ModelRequest.output``) over each provider's native mechanism, on the
HTTP stand-ins: a forced tool call for Anthropic, a JSON-schema response format for Chat
Completions; ``structured_text`` reads the JSON from either, streamed and plain."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import pytest

from regiment.errors import ConfigError
from regiment.models import (
    AnthropicModel,
    Message,
    ModelRequest,
    ModelSettings,
    OpenAIModel,
    ScriptedModel,
    structured_text,
)
from regiment.tools import ToolDefinition

from . import chat_api, messages_api
from .standin import StandIn, serve

pytestmark = pytest.mark.anyio

INVOICE = ToolDefinition(
    name="invoice",
    description="The invoice's total and currency.",
    input_schema={
        "type": "object",
        "properties": {"total": {"type": "integer"}, "currency": {"type": "string"}},
        "required": ["total", "currency"],
    },
)
ANSWER = {"total": 42, "currency": "EUR"}


def _request(output: ToolDefinition | None = INVOICE) -> ModelRequest:
    return ModelRequest(
        messages=(Message.user("What is the invoice total?"),), role="synthesizer", output=output
    )


@pytest.fixture(params=["stream", "plain"])
async def api(request: pytest.FixtureRequest) -> AsyncIterator[StandIn]:
    async for server in serve(chat_api.error(500, "server_error", "nothing queued")):
        server.streaming = request.param == "stream"
        yield server


async def test_claude_is_forced_to_call_the_answers_tool(api: StandIn) -> None:
    api.queue(
        messages_api.message(
            [
                {"type": "text", "text": "Here it is."},
                {"type": "tool_use", "id": "toolu_1", "name": "invoice", "input": ANSWER},
            ],
            stop_reason="tool_use",
        )
    )
    model = AnthropicModel(
        "claude-test-1", api_key="k", base_url=api.base_url, stream=api.streaming, max_retries=0
    )
    async with model:
        response = await model.complete(_request())

    (sent,) = api.requests
    assert sent.body["tools"][-1]["name"] == "invoice"
    assert sent.body["tools"][-1]["input_schema"] == INVOICE.input_schema
    assert sent.body["tool_choice"] == {"type": "tool", "name": "invoice"}
    assert json.loads(structured_text(response, INVOICE)) == ANSWER


async def test_chat_completions_get_a_json_schema_response_format(api: StandIn) -> None:
    api.queue(chat_api.completion(json.dumps(ANSWER)))
    model = OpenAIModel(
        "gpt-test-1",
        api_key="k",
        base_url=f"{api.base_url}/v1",
        stream=api.streaming,
        max_retries=0,
    )
    async with model:
        response = await model.complete(_request())

    (sent,) = api.requests
    assert sent.body["response_format"] == {
        "type": "json_schema",
        "json_schema": {
            "name": "invoice",
            "description": INVOICE.description,
            "schema": INVOICE.input_schema,
        },
    }
    assert "tools" not in sent.body
    assert json.loads(structured_text(response, INVOICE)) == ANSWER


async def test_a_request_without_output_asks_for_no_format(api: StandIn) -> None:
    api.queue(
        chat_api.completion("plain words"), messages_api.message([{"type": "text", "text": "hi"}])
    )
    url, stream = api.base_url, api.streaming
    gpt = OpenAIModel("gpt-test-1", api_key="k", base_url=f"{url}/v1", stream=stream, max_retries=0)
    async with gpt:
        await gpt.complete(_request(None))
    claude = AnthropicModel(
        "claude-test-1", api_key="k", base_url=url, stream=stream, max_retries=0
    )
    async with claude:
        await claude.complete(_request(None))

    chat, messages = api.requests
    assert "response_format" not in chat.body
    assert "tool_choice" not in messages.body
    assert "tools" not in messages.body


def test_a_forced_answer_tool_and_extended_thinking_do_not_mix() -> None:
    model = AnthropicModel(
        "claude-test-1",
        api_key="k",
        base_url="http://127.0.0.1:9",
        settings=ModelSettings(max_tokens=4000, thinking_budget=2000),
    )
    with pytest.raises(ConfigError, match="unset thinking_budget"):
        model._params(_request())


async def test_a_scripted_model_answers_with_json_text() -> None:
    model = ScriptedModel([json.dumps(ANSWER)])
    response = await model.complete(_request())
    assert json.loads(structured_text(response, INVOICE)) == ANSWER
