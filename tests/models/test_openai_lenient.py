"""Chat Completions servers that leave out, or reshape, what the API always sends: a
call's id, type or arguments; text content."""

from __future__ import annotations

import json
import logging
from typing import Any, cast

import pytest

from regiment.errors import ModelAPIError
from regiment.models import (
    Message,
    ModelRequest,
    ModelSettings,
    OpenAIModel,
    ToolCallPart,
    ToolResultPart,
)
from regiment.tools import ToolDefinition

from .chat_api import (
    api_streamed_and_plain,  # noqa: F401 (the api fixture)
    completion,
)
from .standin import Reply, StandIn

pytestmark = pytest.mark.anyio

PING = ToolDefinition(name="ping", description="Ping.", input_schema={"type": "object"})


def _without_ids_or_arguments(api: StandIn) -> None:
    """Two calls with ``"id": null`` and ``"arguments": null``, as some local servers send."""
    reply = completion(None, ("x", "ping", "{}"), ("y", "ping", "{}"), finish="tool_calls")
    body: Any = reply.body
    message = body["choices"][0]["message"]
    for call in message["tool_calls"]:
        call["id"], call["function"]["arguments"] = None, None
    assert reply.events is not None
    for n, (name, data) in enumerate(reply.events):
        if '"tool_calls"' in data:
            chunk = json.loads(data)
            for piece in chunk["choices"][0]["delta"].get("tool_calls", ()):
                piece.pop("id", None)
                piece["function"]["arguments"] = None
            reply.events[n] = (name, json.dumps(chunk))
    api.queue(reply, completion("pong"))


async def test_calls_without_ids_or_arguments_get_ids_and_go_back_matched(api: StandIn) -> None:
    # A plain reply's call with "arguments": null was "a reply that could not be read"
    # (AttributeError), and one with no id kept id None: its result went back with
    # tool_call_id null (two such calls could not be told apart). The stream read both.
    _without_ids_or_arguments(api)
    first = ModelRequest(messages=(Message.user("ping twice"),), tools=(PING,))
    async with OpenAIModel(
        "local", base_url=f"{api.base_url}/v1", compatible=True, stream=api.streaming
    ) as model:
        response = await model.complete(first)
        assert response.tool_calls == (
            ToolCallPart(id="call_0", name="ping", arguments={}),
            ToolCallPart(id="call_1", name="ping", arguments={}),
        )
        results = tuple(ToolResultPart(call_id=c.id, content="pong") for c in response.tool_calls)
        messages = (*first.messages, response.to_message(), Message.tool_results(results))
        assert (await model.complete(ModelRequest(messages=messages))).text == "pong"
    sent = api.requests[1].body["messages"]
    assert [c["id"] for c in sent[1]["tool_calls"]] == ["call_0", "call_1"]
    assert [m["tool_call_id"] for m in sent[2:]] == ["call_0", "call_1"]


def _reshaped(reply: Reply, path: str, value: object) -> Reply:
    """``reply`` with the field at ``path`` set to ``value`` (removed, for ``...``): in its
    message, and in its stream, where the first chunk with the field (not empty) gets
    ``value`` and the later ones' pieces are left empty, as it comes whole once."""
    *parents, last = path.split(".")

    def holder(message: Any) -> dict[str, Any] | None:
        for parent in parents:
            inner = message.get(parent)
            message = inner[0] if isinstance(inner, list) else inner
            if message is None:
                return None
        return cast("dict[str, Any]", message) if message.get(last, "") != "" else None

    def put(where: dict[str, Any], new: object) -> None:
        if value is ...:
            del where[last]
        else:
            where[last] = new

    body: Any = reply.body
    message = holder(body["choices"][0]["message"])
    assert message is not None
    put(message, value)
    assert reply.events is not None
    first = True
    for n, (name, data) in enumerate(reply.events):
        chunk = json.loads(data) if data.startswith("{") else None
        delta = holder(chunk["choices"][0]["delta"]) if chunk and chunk["choices"] else None
        if delta is not None:
            put(delta, value if first else "")
            first = False
            reply.events[n] = (name, json.dumps(chunk))
    return reply


async def test_content_as_a_list_of_parts_is_its_text(api: StandIn) -> None:
    # Mistral's reasoning models send content as [{"type": "thinking"...}, {"type":
    # "text"...}]: a plain reply's text was that list (reading response.text raised
    # TypeError), a stream failed as 'a reply that could not be read'.
    parts = [{"type": "thinking", "thinking": [{"type": "text", "text": "hm"}]}]
    parts.append({"type": "text", "text": "It is snowing."})
    api.queue(_reshaped(completion("x"), "content", parts))
    async with OpenAIModel(
        "local", base_url=f"{api.base_url}/v1", compatible=True, stream=api.streaming
    ) as model:
        response = await model.complete(ModelRequest(messages=(Message.user("weather?"),)))
    assert response.text == "It is snowing."


async def test_a_call_with_no_type_and_object_arguments_is_read(api: StandIn) -> None:
    # A plain reply's call without "type": "function" was dropped, silently (the reply
    # then had no call and no text); arguments sent as a JSON object, not JSON text,
    # failed the call (plain: AttributeError; stream: a decode error).
    reply = completion(None, ("call_7", "ping", '{"n": 1}'), finish="tool_calls")
    reply = _reshaped(reply, "tool_calls.type", ...)
    reply = _reshaped(reply, "tool_calls.function.arguments", {"n": 2})
    api.queue(reply)
    async with OpenAIModel(
        "local", base_url=f"{api.base_url}/v1", compatible=True, stream=api.streaming
    ) as model:
        response = await model.complete(ModelRequest(messages=(Message.user("ping"),)))
    assert response.tool_calls == (ToolCallPart(id="call_7", name="ping", arguments={"n": 2}),)


async def test_thinking_budget_is_not_sent_and_says_so_once(
    api: StandIn, caplog: pytest.LogCaptureFixture
) -> None:
    # Claude's extended thinking, set for every role by a team's settings, was dropped
    # from an OpenAI model's calls with no word.
    api.queue(completion("one"), completion("two"))
    thinking = ModelSettings(thinking_budget=2048)
    async with OpenAIModel(
        "local", base_url=f"{api.base_url}/v1", compatible=True, stream=api.streaming
    ) as model:
        with caplog.at_level(logging.WARNING, logger="regiment.models"):
            for _ in range(2):
                await model.complete(
                    ModelRequest(messages=(Message.user("hi"),), settings=thinking)
                )
    assert all("thinking" not in r.body and "reasoning_effort" not in r.body for r in api.requests)
    (said,) = [r.getMessage() for r in caplog.records]
    assert said.startswith("model 'local' (Chat Completions at http://127.0.0.1:")
    assert said.endswith(
        "does not send thinking_budget, which is Claude's extended thinking; for a reasoning "
        "model give extra={'reasoning_effort': 'low' | 'medium' | 'high'} in its settings"
    )


@pytest.mark.parametrize("content", [42, 2.5, {"text": "42"}], ids=["int", "float", "object"])
async def test_content_that_is_no_text_is_a_clear_error(api: StandIn, content: object) -> None:
    # A plain reply whose content was a number ("content": 42, to "how many?") was read as
    # an empty reply, the answer lost with no word; a stream refused such a chunk.
    api.queue(_reshaped(completion("x"), "content", content))
    async with OpenAIModel(
        "local", base_url=f"{api.base_url}/v1", compatible=True, stream=api.streaming
    ) as model:
        with pytest.raises(ModelAPIError, match="sent a reply that could not be read") as caught:
            await model.complete(ModelRequest(messages=(Message.user("how many?"),)))
    if not api.streaming:  # a stream's decoder names the field and the type it expected
        kind = type(content).__name__
        assert f"(ValueError: the message's content is a {kind}, not text;" in str(caught.value)
