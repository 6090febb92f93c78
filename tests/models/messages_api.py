"""Messages API bodies for the stand-in: a reply as JSON and as its event stream."""

from __future__ import annotations

import json

from .standin import Reply, SseEvent

__all__ = ("Block", "error", "message", "message_events")

Block = dict[str, object]


def message(content: list[Block], *, stop_reason: str = "end_turn", **usage: int) -> Reply:
    body: dict[str, object] = {
        "id": "msg_0123",
        "type": "message",
        "role": "assistant",
        "model": "claude-test-1",
        "content": content,
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": {"input_tokens": 11, "output_tokens": 7, **usage},
    }
    return Reply(200, body, {"request-id": "req_ok"}, events=message_events(body))


def message_events(body: dict[str, object]) -> list[SseEvent]:
    """``body`` as the Messages API streams it: text in pieces of a few characters,
    tool input JSON in two halves (a server tool's too; its result comes whole), usage split between message_start and message_delta."""
    content: list[Block] = body["content"]  # type: ignore[assignment]
    usage: dict[str, int] = body["usage"]  # type: ignore[assignment]
    start = {**body, "content": [], "stop_reason": None, "usage": {**usage, "output_tokens": 1}}
    events: list[SseEvent] = [
        ("message_start", json.dumps({"type": "message_start", "message": start}))
    ]
    events.append(("ping", json.dumps({"type": "ping"})))
    for index, block in enumerate(content):
        events += _block_events(index, block)
    delta = {"stop_reason": body["stop_reason"], "stop_sequence": None}
    end_usage = {"output_tokens": usage["output_tokens"]}
    events.append(
        ("message_delta", json.dumps({"type": "message_delta", "delta": delta, "usage": end_usage}))
    )
    events.append(("message_stop", json.dumps({"type": "message_stop"})))
    return events


def _block_events(index: int, block: Block) -> list[SseEvent]:
    def event(kind: str, **fields: object) -> SseEvent:
        return (kind, json.dumps({"type": kind, "index": index, **fields}))

    if block["type"] in ("tool_use", "server_tool_use"):
        opened = event("content_block_start", content_block={**block, "input": {}})
        encoded = json.dumps(block["input"])
        halves = [encoded[: len(encoded) // 2], encoded[len(encoded) // 2 :]]
        deltas = [
            event("content_block_delta", delta={"type": "input_json_delta", "partial_json": half})
            for half in halves
        ]
    elif block["type"] not in ("thinking", "text"):  # redacted thinking, server tool results
        opened, deltas = event("content_block_start", content_block=block), []
    elif block["type"] == "thinking":
        opened = event(
            "content_block_start",
            content_block={"type": "thinking", "thinking": "", "signature": ""},
        )
        deltas = [
            event(
                "content_block_delta",
                delta={"type": "thinking_delta", "thinking": block["thinking"]},
            ),
            event(
                "content_block_delta",
                delta={"type": "signature_delta", "signature": block["signature"]},
            ),
        ]
    else:
        text = str(block["text"])
        opened = event("content_block_start", content_block={"type": "text", "text": ""})
        deltas = [
            event("content_block_delta", delta={"type": "text_delta", "text": text[i : i + 3]})
            for i in range(0, len(text), 3)
        ]
    return [opened, *deltas, event("content_block_stop")]


def error(status: int, error_type: str, text: str, **headers: str) -> Reply:
    body: dict[str, object] = {"type": "error", "error": {"type": error_type, "message": text}}
    return Reply(status, body, {"request-id": f"req_{status}", **headers})
