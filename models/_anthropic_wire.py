"""Our request and response types to and from the Anthropic Messages API."""

from __future__ import annotations

import json
from typing import Literal, TypedDict, assert_never, cast

import httpx2
from anthropic import NotGiven, Omit, not_given, omit
from anthropic.types import (
    ContentBlockParam,
    MessageParam,
    TextBlockParam,
    ThinkingConfigParam,
    ToolChoiceParam,
    ToolParam,
)
from anthropic.types import (
    Message as AnthropicMessage,
)

from regiment._json import UNPARSED_ARGUMENTS, JsonObject
from regiment.errors import ConfigError, ModelAPIError
from regiment.models._api_errors import request_note
from regiment.models._messages import (
    Message,
    ModelRequest,
    ModelResponse,
    Part,
    ResponsePart,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolResultPart,
    Usage,
)
from regiment.models._settings import ModelSettings, extra_tools
from regiment.tools import ToolDefinition

__all__ = (
    "CallParams",
    "call_params",
    "not_streamed",
    "message_params",
    "response_from_message",
    "tool_choice_param",
    "tool_params",
)

# The SDK's default reply length when neither the request nor any setting gives one.
_DEFAULT_MAX_TOKENS = 4096


class CallParams(TypedDict):
    """The keyword arguments of one ``messages.create`` / ``messages.stream`` call."""

    model: str
    max_tokens: int
    messages: list[MessageParam]
    system: str | list[TextBlockParam] | Omit
    tools: list[ToolParam] | Omit
    tool_choice: ToolChoiceParam | Omit
    stop_sequences: list[str] | Omit
    thinking: ThinkingConfigParam | Omit
    extra_body: dict[str, object] | None
    timeout: float | NotGiven


def call_params(
    model: str, request: ModelRequest, settings: ModelSettings, *, prompt_caching: bool
) -> CallParams:
    """The SDK call for ``request`` with ``settings`` applied.

    With ``prompt_caching``, the stable prefix gets cache breakpoints: the last
    tool definition (so the tools are cached on their own, as workers that
    share tools differ in their system prompts), the system prompt (tools and
    system together) and, in a conversation under way, its last block (three
    of the four breakpoints the API allows). The API ignores a breakpoint
    whose prefix is below the model's minimum cacheable length, so short
    prompts cost nothing extra.

    Raises:
        regiment.errors.ConfigError: ``thinking_budget`` is not below ``max_tokens``.
    """
    defined = (*request.tools, request.output) if request.output else request.tools
    added, extra_body = extra_tools(settings)  # a server tool goes next to the request's
    given = [*(tool_params(defined, cache=prompt_caching) if defined else []), *added]
    tools = cast("list[ToolParam]", given) if given else omit
    choice = tool_choice_param(request.tool_choice) if request.tool_choice else omit
    if request.output is not None:  # a structured answer: Claude must call its tool
        if settings.thinking_budget is not None:
            raise ConfigError(
                "a structured answer forces a tool call, which extended thinking does not "
                "allow; unset thinking_budget for this role"
            )
        choice = {"type": "tool", "name": request.output.name}
    most = settings.max_tokens or _DEFAULT_MAX_TOKENS
    thinking: ThinkingConfigParam | Omit = omit
    if (budget := settings.thinking_budget) is not None:
        if budget >= most:
            raise ConfigError(
                f"thinking_budget ({budget}) must be below max_tokens ({most}), as thinking "
                "tokens count toward max_tokens; raise max_tokens or lower thinking_budget"
            )
        thinking = {"type": "enabled", "budget_tokens": budget}
    stops = settings.stop_sequences
    return {
        "model": model,
        "max_tokens": most,
        "messages": message_params(request, cache=prompt_caching),
        "system": _system_param(request.system, cache=prompt_caching),
        "tools": tools,
        "tool_choice": choice,
        "stop_sequences": list(stops) if stops else omit,
        "thinking": thinking,
        "extra_body": _extra_body(settings, extra_body),
        "timeout": not_given if settings.timeout is None else settings.timeout,
    }


def _system_param(system: str, *, cache: bool) -> str | list[TextBlockParam] | Omit:
    if not system:
        return omit
    if not cache:
        return system
    return [{"type": "text", "text": system, "cache_control": {"type": "ephemeral"}}]


def _extra_body(
    settings: ModelSettings, extra: dict[str, object] | None
) -> dict[str, object] | None:
    # SDK 2.x has no `temperature` / `top_p` arguments; the request body still carries them.
    body: dict[str, object] = {}
    if settings.temperature is not None:
        body["temperature"] = settings.temperature
    if settings.top_p is not None:
        body["top_p"] = settings.top_p
    body.update(extra or {})
    return body or None


def message_params(request: ModelRequest, *, cache: bool = False) -> list[MessageParam]:
    """The request's conversation as Messages API ``messages``.

    With ``cache``, a conversation that is under way (more than one message:
    a tool loop, a re-prompt) gets a breakpoint on its last block, so the next
    call, which repeats all of it, reads it from the cache.
    """
    params = [_message_param(message) for message in request.messages]
    # The API refuses a message with no content, and an empty assistant reply (the
    # planner's, re-sent with its re-prompt) has none once its empty text is left out.
    # It joins consecutive turns of one role, so leaving such a reply out changes nothing.
    params = [p for p in params if p["content"] or p["role"] == "user"]
    if cache and len(params) > 1:
        last = params[-1]["content"]
        if isinstance(last, list) and last:
            block = last[-1]
            if block["type"] in ("text", "tool_result", "tool_use"):
                block["cache_control"] = {"type": "ephemeral"}
    return params


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
        case ThinkingPart(thinking=thinking, signature=signature, redacted=redacted):
            if redacted is not None:
                return {"type": "redacted_thinking", "data": redacted}
            return {"type": "thinking", "thinking": thinking, "signature": signature}
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


def tool_params(tools: tuple[ToolDefinition, ...], *, cache: bool = False) -> list[ToolParam]:
    """Tool definitions as Messages API ``tools``; ``cache`` marks the last as a cache breakpoint."""
    params: list[ToolParam] = [
        {"name": t.name, "description": t.description, "input_schema": dict(t.input_schema)}
        for t in tools
    ]
    if cache and params:
        params[-1]["cache_control"] = {"type": "ephemeral"}
    return params


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


def _tool_input(value: object) -> JsonObject:
    """A ``tool_use`` block's input; one that is not a JSON object (a server that is
    not Anthropic's may send a list or a string) is kept for the model to correct."""
    if isinstance(value, dict):
        return cast(JsonObject, dict(value))
    return {UNPARSED_ARGUMENTS: json.dumps(value, ensure_ascii=False)}


def response_from_message(message: AnthropicMessage) -> ModelResponse:
    """A Messages API reply as our ``ModelResponse``.

    Text, ``tool_use`` and thinking blocks are kept (thinking goes back to the
    API with the conversation); other block kinds (server tools) are not
    requested by this adapter, so they are left out.
    """
    parts: list[ResponsePart] = []
    for block in message.content:
        if block.type == "text":
            parts.append(TextPart(text=block.text))
        elif block.type == "tool_use":
            arguments = _tool_input(block.input)
            parts.append(ToolCallPart(id=block.id, name=block.name, arguments=arguments))
        elif block.type == "thinking":
            parts.append(ThinkingPart(thinking=block.thinking, signature=block.signature))
        elif block.type == "redacted_thinking":
            parts.append(ThinkingPart(redacted=block.data))
    usage = message.usage  # typed as always there; a proxy may leave it out (estimated)
    return ModelResponse(
        parts=tuple(parts),
        stop_reason=message.stop_reason or "",
        usage=Usage(
            input_tokens=getattr(usage, "input_tokens", None) or 0,
            output_tokens=getattr(usage, "output_tokens", None) or 0,
            cache_read_tokens=getattr(usage, "cache_read_input_tokens", None) or 0,
            cache_write_tokens=getattr(usage, "cache_creation_input_tokens", None) or 0,
        ),
        model=message.model,
        response_id=message.id,
    )


def not_streamed(
    answer: httpx2.Response, body: bytes, *, model: str, request_id: str | None
) -> AnthropicMessage:
    """The one whole message (JSON) a server answered a streamed call with, as it would
    a plain call: some proxies and stand-ins ignore ``stream``. Built as the SDK builds a
    plain call's reply.

    Raises:
        ModelAPIError: the body is no such message (an error page, a wrong ``base_url``).
    """
    content_type = answer.headers.get("content-type")
    message = _whole_message(body) if "json" in (content_type or "") else None
    if message is None:
        raise ModelAPIError(
            f"the Anthropic API answered for model {model!r} with {content_type}, not an "
            f"event stream ({request_note(request_id)}); check base_url points at the "
            "Messages API",
            status_code=answer.status_code,
            request_id=request_id,
        )
    return message


def _whole_message(body: bytes) -> AnthropicMessage | None:
    try:
        data = json.loads(body)
    except (ValueError, RecursionError):  # not JSON (a UnicodeDecodeError is a ValueError)
        return None
    if not isinstance(data, dict) or data.get("type") != "message":
        return None
    if not isinstance(data.get("content"), list):
        return None
    return AnthropicMessage.model_construct(**data)
