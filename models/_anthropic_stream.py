"""Reading a streamed Messages API reply: its events as our part deltas."""

from __future__ import annotations

from typing import final

from anthropic.lib.streaming import ParsedMessageStreamEvent

from regiment.models._stream import PartDelta, TextPartDelta, ToolCallPartDelta, ToolCallPartStart

__all__ = ("PartIndexer",)

# The block kinds the response keeps as parts (server tool blocks are left out).
_KEPT = ("text", "tool_use", "thinking", "redacted_thinking")


@final
class PartIndexer:
    """Turns stream events into part deltas numbered as the final response's parts.

    The API numbers every content block; the response keeps text, ``tool_use``
    and thinking blocks only, so a block it leaves out must not shift the
    indexes the deltas carry. Thinking is not handed out as deltas.
    """

    def __init__(self) -> None:
        self._parts: dict[int, int] = {}
        self.started = False
        self.stopped = False  # the stream's message_stop arrived: the reply is whole

    def delta(self, event: ParsedMessageStreamEvent[None]) -> PartDelta | None:
        """The part delta ``event`` carries, if any (raw block events only)."""
        if not self.started:
            if event.type != "message_start":
                raise ValueError(f"the stream began with a {event.type} event, not message_start")
            self.started = True
        if event.type == "message_stop":
            self.stopped = True
        elif event.type == "content_block_start":
            block = event.content_block
            if block.type not in _KEPT:
                return None
            index = self._parts[event.index] = len(self._parts)
            if block.type == "tool_use":
                return ToolCallPartStart(index=index, id=block.id, name=block.name)
            if block.type == "text" and block.text:
                return TextPartDelta(index=index, text=block.text)
        elif event.type == "content_block_delta":
            index_or_none = self._parts.get(event.index)
            delta = event.delta
            if index_or_none is None:
                return None
            if delta.type == "text_delta" and delta.text:
                return TextPartDelta(index=index_or_none, text=delta.text)
            if delta.type == "input_json_delta" and delta.partial_json:
                return ToolCallPartDelta(index=index_or_none, arguments=delta.partial_json)
        return None
