"""Each provider's wire on the HTTP stand-in: how to build its model against a
stand-in and the replies it speaks. ``test_providers`` runs its suite over
``WIRES``; tests above the models room use them to put a real provider in a team."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass

from regiment.models import AnthropicModel, ModelRequest, OpenAIModel, Usage, estimate_tokens

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
    # The reply, its stream cut after ``kept`` events by an error event of ``error_type``
    # (saying "Overloaded", or what is given).
    failing: Callable[..., Reply]
    head: int  # how many events a stream sends before any piece of the reply
    # What a stream that failed before any piece is charged (Chat Completions says no
    # usage before its last chunk: an estimate of the input).
    failed_usage: Callable[[ModelRequest], Usage]

    def broken(self, text: str, how: str) -> Reply:
        """``text``'s reply, its stream failing after the first pieces of its text: the
        connection ``"cut"``, or else an overloaded error event."""
        reply = self.reply(text, ())
        if how == "cut":
            reply.cut_after = self.head + 3
            return reply
        return self.failing(reply, self.head + 3, "overloaded_error")


def _anthropic_reply(text: str, calls: tuple[Call, ...]) -> Reply:
    blocks: list[messages_api.Block] = [{"type": "text", "text": text}]
    blocks += [
        {"type": "tool_use", "id": i, "name": n, "input": json.loads(a)} for i, n, a in calls
    ]
    return messages_api.message(blocks, stop_reason="tool_use" if calls else "end_turn")


def _openai_reply(text: str, calls: tuple[Call, ...]) -> Reply:
    return chat_api.completion(text, *calls, finish="tool_calls" if calls else "stop")


def _anthropic_failing(reply: Reply, kept: int, error_type: str, said: str = "Overloaded") -> Reply:
    failure = {"type": "error", "error": {"type": error_type, "message": said}}
    events = [*(reply.events or [])[:kept], ("error", json.dumps(failure))]
    return Reply(reply.status, reply.body, reply.headers, events=events)


def _openai_failing(reply: Reply, kept: int, error_type: str, said: str = "Overloaded") -> Reply:
    failure = {"error": {"message": said, "type": error_type}}
    events = [*(reply.events or [])[:kept], (None, json.dumps(failure))]
    return Reply(reply.status, reply.body, reply.headers, events=events)


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
        failing=_anthropic_failing,
        head=2,  # message_start (its usage: 11 in, 1 out), ping
        failed_usage=lambda request: Usage(input_tokens=11, output_tokens=1),
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
        failing=_openai_failing,
        head=1,  # the role chunk
        failed_usage=lambda request: Usage(input_tokens=estimate_tokens(request)),
    ),
}
