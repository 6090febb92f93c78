"""A tool call's result records: its value as JSON data, and its error results."""

from __future__ import annotations

from collections.abc import Mapping
from typing import cast

from regiment._json import JsonObject, JsonValue
from regiment._text import json_shown
from regiment.tools._result import ToolResult

__all__ = (
    "NotJson",
    "error_result",
    "jsonable",
    "no_context",
    "not_an_object",
    "raw_arguments",
)


class NotJson(Exception):
    """A tool's return value that cannot be turned into JSON data."""


def jsonable(value: object) -> JsonValue:
    if isinstance(value, str):  # the common case needs no pydantic
        return value
    # pydantic costs ~40 ms to import; a tool built by @tool has loaded it already.
    from pydantic_core import PydanticSerializationError, to_jsonable_python

    try:
        return cast(JsonValue, to_jsonable_python(value))
    except (PydanticSerializationError, ValueError) as exc:
        # ValueError: bytes that are not UTF-8 (UnicodeDecodeError), a value that holds itself.
        raise NotJson(str(exc)) from exc


def not_an_object(sent: JsonValue) -> str:
    """What is wrong with arguments a model adapter could not read as one JSON object."""
    # Text the adapter could not parse is shown as the model wrote it, not quoted again.
    if not isinstance(sent, str):
        return f"the arguments are not one JSON object (got {json_shown(sent, 200)}); send them as a JSON object"
    shown = sent if len(sent) <= 200 else sent[:197] + "..."
    return f"the arguments are not one JSON object (got {shown}); send them as a JSON object"


def raw_arguments(arguments: object) -> JsonObject:
    """Arguments that did not validate, kept for the record as far as they are an object."""
    if isinstance(arguments, Mapping):
        return {str(k): cast(JsonValue, v) for k, v in arguments.items()}
    return {}


def error_result(
    tool_name: str,
    call_id: str,
    message: str,
    error_type: str,
    arguments: JsonObject,
    key: str | None = None,
    attempts: int = 0,
) -> ToolResult:
    return ToolResult(
        call_id=call_id,
        tool_name=tool_name,
        content=message,
        is_error=True,
        error_type=error_type,
        attempts=attempts,
        idempotency_key=key,
        arguments=arguments,
    )


def no_context(tool_name: str, call_id: str, sent: JsonObject) -> ToolResult:
    message = (
        f"tool {tool_name!r} takes a RunContext, so it runs only inside a run "
        "(a worker's tool loop) or with call(..., context=RunContext(...))"
    )
    return error_result(tool_name, call_id, message, "no_run_context", sent)
