"""Reading a streamed Messages API reply: its raw events as our part deltas, and the
whole reply once the stream ends.

The reply is built here from the raw events rather than by the SDK's message
stream, which parses a tool call's JSON as it arrives and gives up on the whole
reply (a ``ValueError`` mid-stream) when the model wrote arguments that are not
JSON; here such arguments are kept for the model to correct, as a plain call's are.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import cast, final

from anthropic.types import RawMessageStreamEvent

from regiment._json import UNPARSED_ARGUMENTS, JsonObject
from regiment.models._messages import (
    ModelResponse,
    ResponsePart,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    Usage,
)
from regiment.models._stream import PartDelta, TextPartDelta, ToolCallPartDelta, ToolCallPartStart

__all__ = ("PartIndexer", "tool_arguments")

# The block kinds the response keeps as parts (server tool blocks are left out).
_KEPT = ("text", "tool_use", "thinking", "redacted_thinking")


def tool_arguments(raw: str) -> JsonObject:
    """A ``tool_use`` block's input from its streamed JSON; text that is not a JSON
    object is kept under ``UNPARSED_ARGUMENTS``, so the model is told what it sent."""
    if not raw.strip():
        return {}  # a call without arguments streams no JSON at all
    try:
        parsed = json.loads(raw)
    except (ValueError, RecursionError):  # RecursionError: nested thousands deep
        parsed = None
    return cast(JsonObject, parsed) if isinstance(parsed, dict) else {UNPARSED_ARGUMENTS: raw}


@final
@dataclass(slots=True)
class _Block:
    """One kept content block as its events build it."""

    kind: str
    text: str = ""  # text, thinking, or a tool call's JSON
    id: str = ""
    name: str = ""
    signature: str = ""
    redacted: str | None = None
    opened_with: object = None  # a tool call's input as its block began (the API's: {})

    def part(self) -> ResponsePart:
        if self.kind == "tool_use":
            given = self.opened_with
            if not self.text and isinstance(given, dict) and given:  # whole, with no deltas
                return ToolCallPart(id=self.id, name=self.name, arguments=dict(given))
            return ToolCallPart(id=self.id, name=self.name, arguments=tool_arguments(self.text))
        if self.kind == "text":
            return TextPart(text=self.text)
        if self.redacted is not None:
            return ThinkingPart(redacted=self.redacted)
        return ThinkingPart(thinking=self.text, signature=self.signature)


@final
class PartIndexer:
    """Turns raw stream events into part deltas numbered as the final response's
    parts, and builds that response.

    The API numbers every content block; the response keeps text, ``tool_use``
    and thinking blocks only, so a block it leaves out must not shift the
    indexes the deltas carry. Thinking is not handed out as deltas.
    """

    def __init__(self) -> None:
        self._parts: dict[int, int] = {}
        self._blocks: list[_Block] = []
        self.started = False
        self.stopped = False  # the stream's message_stop arrived: the reply is whole
        self._id, self._model, self._stop_reason = "", "", ""
        self._usage = Usage()

    def delta(self, event: RawMessageStreamEvent) -> PartDelta | None:
        """The part delta ``event`` carries, if any; what it adds to the reply is kept.

        Raises:
            ValueError: the stream did not begin with ``message_start``.
        """
        if not self.started:
            if event.type != "message_start":
                raise ValueError(f"the stream began with a {event.type} event, not message_start")
            self.started = True
        if event.type == "content_block_delta":
            return self._more(event.index, event.delta)
        if event.type == "content_block_start":
            return self._opened(event.index, event.content_block)
        if event.type == "message_start":
            message = event.message
            self._id, self._model = message.id, message.model
            self._usage = _usage(self._usage, message.usage)
        elif event.type == "message_delta":
            self._stop_reason = event.delta.stop_reason or self._stop_reason
            self._usage = _usage(self._usage, event.usage)
        elif event.type == "message_stop":
            self.stopped = True
        return None

    def _opened(self, api_index: int, block: object) -> PartDelta | None:
        kind = getattr(block, "type", None)
        if kind not in _KEPT:
            return None
        index = self._parts[api_index] = len(self._blocks)
        if kind == "tool_use":
            call_id, name = getattr(block, "id", ""), getattr(block, "name", "")
            given = getattr(block, "input", None)
            self._blocks.append(_Block("tool_use", id=call_id, name=name, opened_with=given))
            return ToolCallPartStart(index=index, id=call_id, name=name)
        if kind == "redacted_thinking":
            self._blocks.append(_Block("thinking", redacted=getattr(block, "data", "")))
            return None
        text = getattr(block, "thinking" if kind == "thinking" else "text", "") or ""
        signature = getattr(block, "signature", "") or ""  # the API's: "", then deltas
        self._blocks.append(_Block(str(kind), text=text, signature=signature))
        return TextPartDelta(index=index, text=text) if kind == "text" and text else None

    def _more(self, api_index: int, delta: object) -> PartDelta | None:
        index = self._parts.get(api_index)
        if index is None:
            return None
        block = self._blocks[index]
        kind = getattr(delta, "type", None)
        if kind == "text_delta" and (text := getattr(delta, "text", "")):
            block.text += text
            return TextPartDelta(index=index, text=text)
        if kind == "input_json_delta" and (piece := getattr(delta, "partial_json", "")):
            block.text += piece
            return ToolCallPartDelta(index=index, arguments=piece)
        if kind == "thinking_delta":
            block.text += getattr(delta, "thinking", "")
        elif kind == "signature_delta":
            block.signature += getattr(delta, "signature", "")
        return None

    def spent(self) -> Usage | None:
        """The usage the stream reported so far (``None`` before ``message_start``)."""
        return self._usage if self.started and self._usage != Usage() else None

    def response(self) -> ModelResponse:
        """The whole reply, once the stream has finished."""
        return ModelResponse(
            parts=tuple(block.part() for block in self._blocks),
            stop_reason=self._stop_reason,
            usage=self._usage,
            model=self._model,
            response_id=self._id or None,
        )


def _usage(before: Usage, usage: object) -> Usage:
    """``before`` with what a ``message_start`` or ``message_delta`` usage says (a
    count it leaves out, or gives as null, stays as it was)."""

    def count(name: str, was: int) -> int:
        value = getattr(usage, name, None)
        return value if isinstance(value, int) else was

    return Usage(
        input_tokens=count("input_tokens", before.input_tokens),
        output_tokens=count("output_tokens", before.output_tokens),
        cache_read_tokens=count("cache_read_input_tokens", before.cache_read_tokens),
        cache_write_tokens=count("cache_creation_input_tokens", before.cache_write_tokens),
    )
