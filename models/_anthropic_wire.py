"""Our request and response types to and from the Anthropic Messages API."""

from __future__ import annotations

from typing import Literal, assert_never, cast

from anthropic.types import (
    ContentBlockParam,
    MessageParam,
    ToolChoiceParam,
    ToolParam,
)
from anthropic.types import (
    Message as AnthropicMessage,
)

from regiment._json import JsonObject
from regiment.models._messages import (
    Message,
    ModelRequest,
    ModelResponse,
    Part,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    Usage,
)
from regiment.tools import ToolDefinition

__all__ = ("message_params", "response_from_message", "tool_choice_param", "tool_params")


def message_params(request: ModelRequest) -> list[MessageParam]:
    """The request's conversation as Messages API ``messages``."""
    return [_message_param(message) for message in request.messages]


def _message_param(message: Message) -> MessageParam:
    # The API rejects empty text blocks; an empty text part carries nothing anyway.
    blocks = [
        _block_param(part)
        for part in message.parts
        if not (isinstance(part, TextPart) and not part.text)
    ]
    if message.role == "user":
        return {"role": "user", "content": blocks}
    return {"role": "assistant", "content": blocks}


def _block_param(part: Part) -> ContentBlockParam:
    match part:
        case TextPart(text=text):
            return {"type": "text", "text": text}
        case ToolCallPart(id=call_id, name=name, arguments=arguments):
            return {"type": "tool_use", "id": call_id, "name": name, "input": dict(arguments)}
        case ToolResultPart(call_id=call_id, content=content, is_error=is_error):
            if is_error:
                return {
                    "type": "tool_result",
                    "tool_use_id": call_id,
                    "content": content,
                    "is_error": True,
                }
            return {"type": "tool_result", "tool_use_id": call_id, "content": content}
        case _:
            assert_never(part)


def tool_params(tools: tuple[ToolDefinition, ...]) -> list[ToolParam]:
    """Tool definitions as Messages API ``tools``."""
    return [
        {"name": t.name, "description": t.description, "input_schema": dict(t.input_schema)}
        for t in tools
    ]


def tool_choice_param(choice: Literal["auto", "any", "none"]) -> ToolChoiceParam:
    """``tool_choice`` as the Messages API spells it."""
    match choice:
        case "auto":
            return {"type": "auto"}
        case "any":
            return {"type": "any"}
        case "none":
            return {"type": "none"}
        case _:
            assert_never(choice)


def response_from_message(message: AnthropicMessage) -> ModelResponse:
    """A Messages API reply as our ``ModelResponse``.

    Text and ``tool_use`` blocks are kept; other block kinds (thinking, server
    tools) are not requested by this adapter, so they are left out.
    """
    parts: list[TextPart | ToolCallPart] = []
    for block in message.content:
        if block.type == "text":
            parts.append(TextPart(text=block.text))
        elif block.type == "tool_use":
            arguments = cast(JsonObject, dict(block.input))
            parts.append(ToolCallPart(id=block.id, name=block.name, arguments=arguments))
    usage = message.usage
    return ModelResponse(
        parts=tuple(parts),
        stop_reason=message.stop_reason or "",
        usage=Usage(
            input_tokens=usage.input_tokens,
            output_tokens=usage.output_tokens,
            cache_read_tokens=usage.cache_read_input_tokens or 0,
            cache_write_tokens=usage.cache_creation_input_tokens or 0,
        ),
        model=message.model,
        response_id=message.id,
    )
