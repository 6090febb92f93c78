"""Tool calls from Chat Completions servers that leave a call's id or arguments out."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest

from regiment.models import Message, ModelRequest, OpenAIModel, ToolCallPart, ToolResultPart
from regiment.tools import ToolDefinition

from .chat_api import completion, error
from .standin import StandIn, serve

pytestmark = pytest.mark.anyio

PING = ToolDefinition(name="ping", description="Ping.", input_schema={"type": "object"})


@pytest.fixture(params=["stream", "plain"])
async def api(request: pytest.FixtureRequest) -> AsyncIterator[StandIn]:
    async for server in serve(
        error(500, "server_error", "nothing queued", **{"x-should-retry": "false"})
    ):
        server.streaming = request.param == "stream"
        yield server


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
