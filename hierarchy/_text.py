"""Text from a model, made safe to encode.

A Python ``str`` may hold lone surrogates (``"\\ud800"``): a provider's JSON
can carry them as escapes, and a scripted or custom model can return them.
No UTF-8 encoder accepts them, so one would crash whatever encodes the text
next (a JSON decoder, a span exporter, an events file, the next request).
Model replies are cleaned once, where they enter the hierarchy.
"""

from __future__ import annotations

from typing import NoReturn, assert_never

import msgspec

from regiment._json import JsonObject, JsonValue
from regiment.errors import ConfigError
from regiment.models import Model, ModelResponse, TextPart, ThinkingPart, ToolCallPart

__all__ = ("valid_response", "valid_text")


def valid_text(text: str) -> str:
    """``text`` with each lone surrogate replaced by U+FFFD (a surrogate pair is joined)."""
    if text.isascii():  # no surrogate in it; a scan, with no copy made
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return text


def valid_response(response: ModelResponse, model: Model | None = None) -> ModelResponse:
    """``response`` with every text the model wrote passed through :func:`valid_text`.

    ``model``: the one that replied; its ``name`` (a property call, #22) is read only
    for the error.

    Raises:
        ConfigError: ``response`` is not a ``ModelResponse`` (a custom ``Model``,
            ``model``, returned something else).
    """
    if not isinstance(response, ModelResponse):
        _not_a_response(response, "" if model is None else model.name)
    # Once per model call: a plain loop, and a new tuple only if a part changed.
    parts = response.parts
    for index, part in enumerate(parts):
        if type(part) is TextPart and part.text.isascii():
            continue  # the usual reply: plain text with no surrogate in it
        clean = _valid_part(part)
        if clean is not part:
            rest = tuple(_valid_part(p) for p in parts[index + 1 :])
            return msgspec.structs.replace(response, parts=(*parts[:index], clean, *rest))
    return response


def _not_a_response(value: object, model: str) -> NoReturn:
    shown = repr(value)
    shown = shown if len(shown) <= 60 else shown[:57] + "..."
    raise ConfigError(
        f"model {model!r} returned the {type(value).__name__} {shown} from complete(), not a "
        "ModelResponse; a Model's complete() must return regiment.models.ModelResponse "
        "(text_response(...) and tool_call_response(...) make one)"
    )


def _valid_part(
    part: TextPart | ToolCallPart | ThinkingPart,
) -> TextPart | ToolCallPart | ThinkingPart:
    match part:
        case TextPart(text=text):
            clean = valid_text(text)
            return part if clean is text else TextPart(text=clean)
        case ToolCallPart(id=call_id, name=name, arguments=arguments):
            try:
                msgspec.json.encode(arguments)
            except UnicodeEncodeError:
                arguments = _valid_object(arguments)
            else:
                # ASCII, as ids and names are as a rule, has no surrogate: no call (#22)
                if (call_id.isascii() or valid_text(call_id) is call_id) and (
                    name.isascii() or valid_text(name) is name
                ):
                    return part
            return ToolCallPart(id=valid_text(call_id), name=valid_text(name), arguments=arguments)
        case ThinkingPart():
            return part  # sent back verbatim: its signature covers the text
        case _:
            assert_never(part)


def _valid_object(value: JsonObject) -> JsonObject:
    return {valid_text(key): _valid_value(item) for key, item in value.items()}


def _valid_value(value: JsonValue) -> JsonValue:
    if isinstance(value, str):
        return valid_text(value)
    if isinstance(value, list):
        return [_valid_value(item) for item in value]
    if isinstance(value, dict):
        return _valid_object(value)
    return value
