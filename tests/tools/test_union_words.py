"""A tool parameter typed as a union: the model is told in JSON words what to send.

pydantic names each form of a union it tried by its Python type in the error's
location: the model read ``a.int: Input should be a valid integer; a.str: ...``, or
``a.function-after[...]``, ``a.dict[str,int]``, ``a.enum[Color]``, ``a.cat.lives``,
and ``Input tag 'cow' found using 'kind' does not match any of the expected tags:
'cat', 'dog'``: fields it never saw in the schema, and values in Python's quotes.
Each shape here is worded as the other argument errors are; so is an MCP tool's
``anyOf`` or ``oneOf``, which said 'Input should meet the schema's "anyOf": [...]'.
"""

from __future__ import annotations

import datetime
import enum
from dataclasses import dataclass
from typing import Annotated, Literal

import pytest
from pydantic import BaseModel, Field, field_validator
from typing_extensions import TypedDict

from regiment._json import JsonObject
from regiment.tools import Toolset, tool
from regiment.tools._mcp_tools import JsonSchemaArguments

pytestmark = pytest.mark.anyio


class Address(BaseModel):
    city: str
    zip: int


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


class Cat(BaseModel):
    kind: Literal["cat"]
    lives: int


class Dog(BaseModel):
    kind: Literal["dog"]
    good: bool


@dataclass
class Point:
    x: int


class Size(TypedDict):
    width: int


class Code(BaseModel):
    code: str

    @field_validator("code")
    @classmethod
    def _upper(cls, value: str) -> str:
        return value.upper()


@tool
def number_or_text(a: int | str) -> str:
    """One."""
    return "ok"


@tool
def choice_or_null(a: Literal["a", "b"] | None) -> str:
    """One."""
    return "ok"


@tool
def model_or_dict(a: Address | dict[str, int]) -> str:
    """One."""
    return "ok"


@tool
def tagged(a: Annotated[Cat | Dog, Field(discriminator="kind")]) -> str:
    """One."""
    return "ok"


@tool
def untagged(a: Cat | Dog) -> str:
    """One."""
    return "ok"


@tool
def list_or_number(a: list[int] | int) -> str:
    """One."""
    return "ok"


@tool
def enum_or_number(a: Color | int) -> str:
    """One."""
    return "ok"


@tool
def bounded_or_text(a: Annotated[int, Field(ge=0)] | str) -> str:
    """One."""
    return "ok"


@tool
def classes(a: Point | Size) -> str:
    """One."""
    return "ok"


@tool
def date_or_number(a: datetime.date | float) -> str:
    """One."""
    return "ok"


@tool
def validated_or_null(a: Code | int | None) -> str:
    """One."""
    return "ok"


@tool
def nested(a: list[int | str]) -> str:
    """One."""
    return "ok"


TOOLS = Toolset(
    "w",
    [
        number_or_text,
        choice_or_null,
        model_or_dict,
        tagged,
        untagged,
        list_or_number,
        enum_or_number,
        bounded_or_text,
        classes,
        date_or_number,
        validated_or_null,
        nested,
    ],
)


async def told(name: str, a: object) -> str:
    result = await TOOLS.call(name, {"a": a}, call_id="c")  # type: ignore[dict-item]
    assert result.error_type == "invalid_arguments"
    assert isinstance(result.content, str)
    return result.content.removeprefix(f"invalid arguments for tool '{name}': ")


@pytest.mark.parametrize(
    ("name", "sent", "said"),
    [
        ("number_or_text", 1.5, "a: Input should be an integer or a string (got 1.5)"),
        ("number_or_text", None, "a: Input should be an integer or a string (got null)"),
        ("number_or_text", True, "a: Input should be an integer or a string (got true)"),
        ("choice_or_null", "c", 'a: Input should be "a" or "b" or null (got "c")'),
        ("list_or_number", "x", 'a: Input should be an array or an integer (got "x")'),
        (
            "enum_or_number",
            "green",
            'a: Input should be "red" or "blue" or an integer (got "green")',
        ),
        ("date_or_number", True, "a: Input should be a date string or a number (got true)"),
        (
            "model_or_dict",
            "x",
            'a: Input should be an object with city, zip or an object (got "x")',
        ),
        ("classes", 1, "a: Input should be an object with x or an object with width (got 1)"),
        (
            "validated_or_null",
            "x",
            'a: Input should be an object with code, an integer or null (got "x")',
        ),
    ],
)
async def test_a_value_of_no_forms_type_is_told_the_forms(
    name: str, sent: object, said: str
) -> None:
    assert await told(name, sent) == said


async def test_a_value_of_one_forms_type_is_told_what_that_form_needs() -> None:
    assert await told("list_or_number", ["x"]) == 'a[0]: Input should be a valid integer (got "x")'
    assert await told("bounded_or_text", -1) == (
        "a: Input should be greater than or equal to 0 (got -1)"
    )
    assert await told("model_or_dict", {"city": "Oslo"}) == (  # both forms are objects
        "a.zip: Field required, send an integer (for a as an object with city, zip); "
        'a.city: Input should be a valid integer (got "Oslo") (for a as an object)'
    )
    assert await told("validated_or_null", {"code": 7}) == (
        "a.code: Input should be a valid string (got 7)"
    )


async def test_a_tagged_unions_tag_is_a_field_of_the_object() -> None:
    assert await told("tagged", {"kind": "cow"}) == (
        'a.kind: Input should be "cat" or "dog" (got "cow")'
    )
    assert await told("tagged", {}) == 'a.kind: Field required, send "cat" or "dog"'
    assert await told("tagged", {"kind": "cat"}) == "a.lives: Field required, send an integer"
    assert await told("tagged", {"kind": "dog", "good": 1}) == (
        "a.good: Input should be a valid boolean (got 1)"
    )


async def test_an_object_several_forms_take_is_told_each_forms_problems() -> None:
    assert await told("untagged", {"kind": "cow", "lives": 9}) == (
        'a.kind: Input should be "cat" (got "cow") (for a as an object with kind, lives); '
        'a.kind: Input should be "dog" (got "cow") (for a as an object with kind, good); '
        "a.good: Field required, send true or false (for a as an object with kind, good); "
        "a.lives: no such field, a has only kind, good (got 9) "
        "(for a as an object with kind, good)"
    )
    assert await told("classes", {"x": "a"}) == (
        'a.x: Input should be a valid integer (got "a") (for a as an object with x); '
        "a.width: Field required, send an integer (for a as an object with width); "
        'a.x: no such field, a has only width (got "a") (for a as an object with width)'
    )


async def test_a_union_inside_a_list_is_worded_at_its_item() -> None:
    assert await told("nested", [1, None, "b", 2.5]) == (
        "a[1]: Input should be an integer or a string (got null); "
        "a[3]: Input should be an integer or a string (got 2.5)"
    )


async def test_no_python_type_name_reaches_the_model() -> None:
    said = " ".join(
        [
            await told("number_or_text", []),
            await told("model_or_dict", {"a": "b"}),
            await told("enum_or_number", None),
            await told("bounded_or_text", None),
            await told("validated_or_null", 1.5),
            await told("tagged", 3),
        ]
    )
    for python in ("a.int", "a.str", "dict[", "enum[", "constrained-", "function-", "'", "None"):
        assert python not in said


MCP_SCHEMA: JsonObject = {
    "type": "object",
    "properties": {
        "a": {"anyOf": [{"type": "integer"}, {"type": "string"}]},
        "b": {
            "oneOf": [
                {
                    "type": "object",
                    "properties": {"x": {"type": "integer"}},
                    "required": ["x"],
                    "additionalProperties": False,
                },
                {"type": "null"},
            ]
        },
        "c": {"anyOf": [{"enum": ["a", "b"]}, {"type": "null"}]},
        "d": {"anyOf": [{"type": "array", "items": {"type": "integer"}}, {"type": "integer"}]},
    },
}


def test_an_mcp_tools_union_is_worded_as_a_functions_is() -> None:
    # It said 'Input should meet the schema's "anyOf": [{"type": "integer"}, ...]'.
    check = JsonSchemaArguments(MCP_SCHEMA, "t")
    assert check.validate({"a": 1.5}) == "a: Input should be an integer or a string (got 1.5)"
    assert check.validate({"b": 3}) == "b: Input should be an object with x or null (got 3)"
    assert check.validate({"b": {"y": 1}}) == (
        "b.x: Field required, send an integer; b.y: no such field, b has only x (got 1)"
    )
    assert check.validate({"c": "z"}) == 'c: Input should be "a" or "b" or null (got "z")'
    assert check.validate({"d": ["x"]}) == 'd[0]: Input should be an integer (got "x")'
