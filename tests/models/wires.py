"""Each provider's wire on the HTTP stand-in: how to build its model against a
stand-in and the replies it speaks. ``test_providers`` runs its suite over
``WIRES``; tests above the models room use them to put a real provider in a team."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass

from regiment.models import AnthropicModel, OpenAIModel

from . import chat_api, messages_api
from .standin import Reply, StandIn

__all__ = ("WIRES", "Call", "Wire")

Call = tuple[str, str, str]  # (id, name, JSON arguments)


@dataclass(frozen=True)
class Wire:
    """One provider: how to build its model and its replies."""

    make: Callable[[StandIn, bool, int], AnthropicModel | OpenAIModel]  # (api, stream, retries)
    reply: Callable[[str, tuple[Call, ...]], Reply]
    transient: Callable[[int], Reply]
    error: Callable[[int, str, str], Reply]  # (status, the provider's error type, message)
    no_reply: Reply
    request_id_header: str


def _anthropic_reply(text: str, calls: tuple[Call, ...]) -> Reply:
    blocks: list[messages_api.Block] = [{"type": "text", "text": text}]
    blocks += [
        {"type": "tool_use", "id": i, "name": n, "input": json.loads(a)} for i, n, a in calls
    ]
    return messages_api.message(blocks, stop_reason="tool_use" if calls else "end_turn")


def _openai_reply(text: str, calls: tuple[Call, ...]) -> Reply:
    return chat_api.completion(text, *calls, finish="tool_calls" if calls else "stop")


WIRES = {
    "anthropic": Wire(
        make=lambda api, stream, retries: AnthropicModel(
            "claude-test-1", api_key="k", base_url=api.base_url, stream=stream, max_retries=retries
        ),
        reply=_anthropic_reply,
        transient=lambda status: messages_api.error(
            status, "api_error", "later", **{"retry-after-ms": "1"}
        ),
        error=messages_api.error,
        no_reply=messages_api.error(
            500, "api_error", "nothing queued", **{"x-should-retry": "false"}
        ),
        request_id_header="request-id",
    ),
    "openai": Wire(
        make=lambda api, stream, retries: OpenAIModel(
            "gpt-test-1",
            api_key="k",
            base_url=f"{api.base_url}/v1",
            stream=stream,
            max_retries=retries,
        ),
        reply=_openai_reply,
        transient=lambda status: chat_api.error(
            status, "server_error", "later", **{"retry-after-ms": "1"}
        ),
        error=chat_api.error,
        no_reply=chat_api.error(
            500, "server_error", "nothing queued", **{"x-should-retry": "false"}
        ),
        request_id_header="x-request-id",
    ),
}
