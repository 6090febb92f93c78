"""Streaming: a reply's parts as they arrive, and the final response as before.

A model that can stream has ``stream(request, on_delta)``: it awaits
``on_delta`` with every piece of the reply as it arrives and still returns the
whole ``ModelResponse`` (content, usage, stop reason). ``stream_response``
calls any ``Model`` that way: a model without ``stream`` answers in one piece,
and its parts are handed to ``on_delta`` whole.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Protocol, TypeAlias, assert_never, runtime_checkable

import msgspec

from regiment.models._messages import (
    ModelRequest,
    ModelResponse,
    TextPart,
    ThinkingPart,
    ToolCallPart,
)
from regiment.models._protocol import Model

__all__ = (
    "DeltaHandler",
    "PartDelta",
    "StreamRestart",
    "StreamingModel",
    "TextPartDelta",
    "ToolCallPartDelta",
    "ToolCallPartStart",
    "emit_response",
    "stream_response",
)


class TextPartDelta(msgspec.Struct, frozen=True, kw_only=True, tag="text_delta"):
    """More text for the text part at ``index`` of the reply.

    Attributes:
        index: the part's position in the final ``ModelResponse.parts``
            (thinking parts count, though they are not streamed).
        text: the new text; a part's deltas, joined, are its whole text.
    """

    index: int
    text: str


class ToolCallPartStart(msgspec.Struct, frozen=True, kw_only=True, tag="tool_call_start"):
    """The model began a tool call, the part at ``index`` of the reply.

    Attributes:
        index: the part's position in the final ``ModelResponse.parts``.
        id: the provider's id for the call.
        name: the tool's name.
    """

    index: int
    id: str
    name: str


class ToolCallPartDelta(msgspec.Struct, frozen=True, kw_only=True, tag="tool_call_delta"):
    """More of a tool call's arguments, as raw JSON text.

    Attributes:
        index: the part's position in the final ``ModelResponse.parts``.
        arguments: a fragment of the arguments' JSON; the fragments of one call,
            joined, are its whole arguments object. Read the parsed arguments
            from the final response.
    """

    index: int
    arguments: str


class StreamRestart(msgspec.Struct, frozen=True, kw_only=True, tag="stream_restart"):
    """The call's stream failed after some of its pieces were handed out, and the call
    is made again: the pieces handed out for the parts at ``index`` and after are void,
    and those parts come again, whole, in the pieces that follow.

    Attributes:
        index: the first part whose pieces are void (0 for a plain call; a later
            leg's first part for a Claude turn continued after ``pause_turn``).
        error: why the stream failed (the error the retry recovers from).
    """

    index: int
    error: str


PartDelta: TypeAlias = TextPartDelta | ToolCallPartStart | ToolCallPartDelta | StreamRestart
"""Any piece of a streamed reply (a ``StreamRestart`` says the pieces before are void)."""

DeltaHandler: TypeAlias = Callable[[PartDelta], Awaitable[None]]
"""Awaited with each piece of a reply, in order; it may wait (back pressure)."""


@runtime_checkable
class StreamingModel(Model, Protocol):
    """A ``Model`` that can also hand out its reply as it arrives."""

    async def stream(self, request: ModelRequest, on_delta: DeltaHandler) -> ModelResponse:
        """Run one model call, awaiting ``on_delta`` with each piece as it arrives.

        Returns:
            The whole reply, as ``complete`` would return it.

        Raises:
            regiment.errors.ModelError: the call failed, or the stream broke off
                or could not be read.
        """
        ...


async def stream_response(
    model: Model, request: ModelRequest, on_delta: DeltaHandler
) -> ModelResponse:
    """Call ``model`` and hand each piece of its reply to ``on_delta``.

    A model with a ``stream`` method streams; any other ``Model`` answers with
    ``complete`` and its parts are handed over whole, so callers need one path.
    """
    stream = getattr(model, "stream", None)
    if callable(stream):
        response: ModelResponse = await stream(request, on_delta)
        return response
    response = await model.complete(request)
    await emit_response(response, on_delta)
    return response


async def emit_response(response: ModelResponse, on_delta: DeltaHandler) -> None:
    """Hand every part of a finished ``response`` to ``on_delta``, each in one piece."""
    for index, part in enumerate(response.parts):
        match part:
            case TextPart(text=text):
                if text:
                    await on_delta(TextPartDelta(index=index, text=text))
            case ToolCallPart(id=call_id, name=name, arguments=arguments):
                await on_delta(ToolCallPartStart(index=index, id=call_id, name=name))
                encoded = msgspec.json.encode(arguments).decode()
                await on_delta(ToolCallPartDelta(index=index, arguments=encoded))
            case ThinkingPart():
                pass  # reasoning is not part of the answer
            case _:
                assert_never(part)
