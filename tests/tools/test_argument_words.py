"""A tool call's argument errors quote what the model sent as JSON, on every path.

A model writes JSON: ``null``, ``true``, ``"abc"``, ``{"a": 1}``. Python's spelling of
the same values (``None``, ``True``, ``'abc'``, ``{'a': 1}``) is not what it sent, and
a model asked to fix ``'abc'`` may well send single quotes back. Each path is checked:
a function's parameters (pydantic), an MCP tool's input schema (jsonschema), an
unknown tool name, arguments that are not an object.
"""

from __future__ import annotations

from typing import Literal

import pytest

from regiment._json import JsonObject
from regiment.tools import Toolset, tool
from regiment.tools._mcp_tools import JsonSchemaArguments

pytestmark = pytest.mark.anyio


@tool
def book(
    seats: int, name: str, window: bool, cabin: Literal["economy", "business"] = "economy"
) -> str:
    """Book seats."""
    return "booked"


SCHEMA: JsonObject = {
    "type": "object",
    "properties": {
        "seats": {"type": "integer", "minimum": 1},
        "cabin": {"enum": ["economy", "business"]},
        "name": {"type": "string"},
    },
    "required": ["seats"],
    "additionalProperties": False,
}


async def problem(arguments: object) -> str:
    result = await Toolset("w", [book]).call("book", arguments, call_id="c")  # type: ignore[arg-type]
    assert result.error_type == "invalid_arguments"
    assert isinstance(result.content, str)
    return result.content.removeprefix("invalid arguments for tool 'book': ")


async def test_a_functions_arguments_are_quoted_as_json() -> None:
    said = await problem({"seats": None, "name": True, "window": "yes", "cabin": "first"})
    assert said == (
        "seats: Input should be a valid integer (got null); "
        "name: Input should be a valid string (got true); "
        'window: Input should be a valid boolean (got "yes"); '
        'cabin: Input should be "economy" or "business" (got "first")'
    )
    extra = await problem({"seats": 1, "name": "a", "window": False, "meal": {"veg": 1}})
    assert extra == (
        'meal: no such field, the arguments have only seats, name, window, cabin (got {"veg": 1})'
    )


async def test_a_missing_argument_says_what_to_send() -> None:
    said = await problem({"name": "a"})
    assert (
        said == "seats: Field required, send an integer; window: Field required, send true or false"
    )


async def test_arguments_that_are_not_an_object_say_which_to_send() -> None:
    for sent, shown in ((None, "null"), ([1, "a"], '[1, "a"]'), ("abc", '"abc"')):
        assert await problem(sent) == (
            f"arguments must be a JSON object with seats, name, window, cabin (got {shown})"
        )


def test_an_mcp_tools_schema_errors_are_quoted_as_json() -> None:
    check = JsonSchemaArguments(SCHEMA, "book")
    assert check.validate({"seats": None, "cabin": "first", "name": {"a": 1}}) == (
        'cabin: Input should be "economy" or "business" (got "first"); '
        'name: Input should be a string (got {"a": 1}); '
        "seats: Input should be an integer (got null)"
    )
    assert check.validate({"name": "a", "meal": True}) == (
        "seats: Field required, send an integer; "
        "meal: no such field, the arguments have only seats, cabin, name (got true)"
    )
    assert check.validate({"seats": 0}) == (
        'seats: Input should meet the schema\'s "minimum": 1 (got 0)'
    )
    assert (
        check.validate(None) == "arguments must be a JSON object with seats, cabin, name (got null)"
    )


async def test_an_unknown_tool_name_is_quoted_as_json() -> None:
    result = await Toolset("w", [book]).call("Book", {}, call_id="c")
    assert (result.error_type, result.content) == (
        "unknown_tool",
        'no tool "Book"; call one of: book',
    )
