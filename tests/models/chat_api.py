"""Chat Completions bodies for the stand-in: a reply as JSON and as its chunk stream."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import pytest

from .standin import Reply, SseEvent, StandIn, serve

__all__ = ("Call", "api_streamed_and_plain", "chunk_events", "completion", "error")

Call = tuple[str, str, str]  # (id, name, JSON arguments)


def completion(
    content: str | None,
    *calls: Call,
    finish: str = "stop",
    prompt: int = 11,
    output: int = 7,
    cached: int = 0,
    refusal: str | None = None,
) -> Reply:
    message: dict[str, object] = {"role": "assistant", "content": content, "refusal": refusal}
    if calls:
        message["tool_calls"] = [
            {"id": i, "type": "function", "function": {"name": n, "arguments": a}}
            for i, n, a in calls
        ]
    usage = {
        "prompt_tokens": prompt,
        "completion_tokens": output,
        "total_tokens": prompt + output,
        "prompt_tokens_details": {"cached_tokens": cached},
    }
    body: dict[str, object] = {
        "id": "chatcmpl-0123",
        "object": "chat.completion",
        "created": 1700000000,
        "model": "gpt-test-1",
        "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
        "usage": usage,
    }
    events = chunk_events(content, calls, finish=finish, usage=usage, refusal=refusal)
    return Reply(200, body, {"x-request-id": "req_ok"}, events=events)


def chunk_events(
    content: str | None,
    calls: tuple[Call, ...],
    *,
    finish: str,
    usage: dict[str, object],
    refusal: str | None = None,
) -> list[SseEvent]:
    """The reply as Chat Completions streams it: a role chunk, text in pieces of a
    few characters (a refusal's too), each call's id and name then its arguments in
    two halves, the finish reason, a usage chunk with no choices, and ``[DONE]``."""

    def chunk(delta: dict[str, object], finish_reason: str | None = None) -> SseEvent:
        choice = {"index": 0, "delta": delta, "finish_reason": finish_reason, "logprobs": None}
        return (None, json.dumps(_chunk_body([choice])))

    events = [chunk({"role": "assistant", "content": ""})]
    text = content or ""
    events += [chunk({"content": text[i : i + 3]}) for i in range(0, len(text), 3)]
    said = refusal or ""
    events += [chunk({"refusal": said[i : i + 3]}) for i in range(0, len(said), 3)]
    for index, (call_id, name, arguments) in enumerate(calls):
        opened = {"index": index, "id": call_id, "type": "function"}
        events.append(
            chunk({"tool_calls": [{**opened, "function": {"name": name, "arguments": ""}}]})
        )
        for half in (arguments[: len(arguments) // 2], arguments[len(arguments) // 2 :]):
            events.append(
                chunk({"tool_calls": [{"index": index, "function": {"arguments": half}}]})
            )
    events.append(chunk({}, finish))
    events.append((None, json.dumps({**_chunk_body([]), "usage": usage})))
    events.append((None, "[DONE]"))
    return events


def _chunk_body(choices: list[dict[str, object]]) -> dict[str, object]:
    return {
        "id": "chatcmpl-0123",
        "object": "chat.completion.chunk",
        "created": 1700000000,
        "model": "gpt-test-1",
        "choices": choices,
    }


def error(
    status: int, error_type: str, text: str, *, code: str | None = None, **headers: str
) -> Reply:
    body: dict[str, object] = {
        "error": {"message": text, "type": error_type, "param": None, "code": code}
    }
    return Reply(status, body, {"x-request-id": f"req_{status}", **headers})


@pytest.fixture(params=["stream", "plain"], name="api")
async def api_streamed_and_plain(request: pytest.FixtureRequest) -> AsyncIterator[StandIn]:
    """The ``api`` fixture of a module that imports this: a Chat Completions stand-in, and
    every test using it runs streamed and plain. A call with no reply queued gets a 500
    that is not retried."""
    async for server in serve(
        error(500, "server_error", "nothing queued", **{"x-should-retry": "false"})
    ):
        server.streaming = request.param == "stream"
        yield server
