"""Arguments are held to the schema the model was shown: a value of the wrong JSON type
is refused (and the model told why), one of the right type is taken, typed."""

from __future__ import annotations

import datetime
import inspect
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from regiment._json import JsonObject, JsonValue
from regiment.tools import Tool, ToolResult, tool


class Point(BaseModel):
    x: int
    y: int


@dataclass(frozen=True)
class Kind:
    """A parameter type, the JSON types its schema allows, and values of those types."""

    annotation: object
    allows: frozenset[str]
    right: st.SearchStrategy[JsonValue]
    typed: Callable[[Any], object]  # what the function should receive for a right value


ints = st.integers(-(2**53), 2**53)
finite = st.floats(allow_nan=False, allow_infinity=False)
dates = st.dates().map(lambda d: d.isoformat())
stamps = st.datetimes(timezones=st.just(datetime.UTC)).map(lambda d: d.isoformat())
KINDS: dict[str, Kind] = {
    "int": Kind(int, frozenset({"integer"}), ints, int),
    "float": Kind(float, frozenset({"integer", "number"}), ints | finite, float),
    "bool": Kind(bool, frozenset({"boolean"}), st.booleans(), bool),
    "str": Kind(str, frozenset({"string"}), st.text(max_size=8), str),
    "date": Kind(
        datetime.date, frozenset({"string"}), dates, lambda v: datetime.date.fromisoformat(str(v))
    ),
    "datetime": Kind(
        datetime.datetime,
        frozenset({"string"}),
        stamps,
        lambda v: datetime.datetime.fromisoformat(str(v)),
    ),
    "list[int]": Kind(list[int], frozenset({"array"}), st.lists(ints, max_size=3), list),
    "Point": Kind(
        Point,
        frozenset({"object"}),
        st.builds(lambda x, y: {"x": x, "y": y}, ints, ints),
        lambda v: Point.model_validate(v),
    ),
    "int | None": Kind(int | None, frozenset({"integer", "null"}), st.none() | ints, lambda v: v),
}
ANY_JSON: st.SearchStrategy[JsonValue] = st.recursive(
    st.none() | st.booleans() | ints | finite | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=2) | st.dictionaries(st.text(max_size=3), inner, max_size=2)
    ),
    max_leaves=4,
)


def json_type(value: object) -> str:
    """The JSON Schema type of a value (an integral number is an ``integer``, as JSON Schema says)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int) or (isinstance(value, float) and value.is_integer()):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


def make_tool(kinds: list[Kind], seen: list[dict[str, object]]) -> Tool[..., object]:
    def body(**kwargs: object) -> str:
        seen.append(kwargs)
        return "ran"

    params = [
        inspect.Parameter(f"p_{i}", inspect.Parameter.KEYWORD_ONLY, annotation=k.annotation)
        for i, k in enumerate(kinds)
    ]
    body.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    return Tool(body, name="probe")


def wrong_for(kind: Kind) -> st.SearchStrategy[JsonValue]:
    """JSON values of a type the kind's schema does not allow."""
    return ANY_JSON.filter(lambda v: json_type(v) not in kind.allows)


@st.composite
def calls(draw: st.DrawFn) -> tuple[list[Kind], JsonObject, frozenset[str]]:
    """Parameters of generated types, arguments for them, and which arguments have the wrong type."""
    kinds = draw(st.lists(st.sampled_from(list(KINDS.values())), min_size=1, max_size=4))
    arguments: JsonObject = {}
    wrong: set[str] = set()
    for i, kind in enumerate(kinds):
        if draw(st.booleans()):
            arguments[f"p_{i}"] = draw(kind.right)
        else:
            arguments[f"p_{i}"] = draw(wrong_for(kind))
            wrong.add(f"p_{i}")
    return kinds, arguments, frozenset(wrong)


async def call(made: Tool[..., object], arguments: JsonObject) -> ToolResult:
    # Through JSON text and back, as arguments arrive from a model.
    return await made.call(json.loads(json.dumps(arguments)), call_id="c1")


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
@settings(max_examples=200, deadline=None)
@given(case=calls())
def test_wrong_json_types_are_refused_and_right_ones_run(
    backend: str, case: tuple[list[Kind], JsonObject, frozenset[str]]
) -> None:
    kinds, arguments, wrong = case
    seen: list[dict[str, object]] = []
    made = make_tool(kinds, seen)
    result = anyio.run(partial(call, made, arguments), backend=backend)
    assert result.arguments == arguments  # what the model sent, never a coerced form
    if wrong:
        assert seen == []
        assert result.is_error
        assert result.error_type == "invalid_arguments"
        # The model reads this text: every wrong argument is named in it.
        # Problems are "; "-separated, each led by its argument's name (p_N); a value
        # the model sent may itself hold "; ", so split only where a name follows.
        text = result.text.removeprefix("invalid arguments for tool 'probe': ")
        problems = re.split(r"; (?=p_\d)", text)
        assert {p.split(":", 1)[0].split(".")[0].split("[")[0] for p in problems} == wrong
    else:
        assert not result.is_error, result.text
        expected = {f"p_{i}": k.typed(arguments[f"p_{i}"]) for i, k in enumerate(kinds)}
        assert seen == [expected]


@tool
def order(quantity: int, price: float, gift: bool, on: datetime.date, to: Point) -> str:
    """Order something."""
    return f"{quantity} x {price} on {on.isoformat()} to {to.x},{to.y}, gift={gift}"


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("field", "value", "problem"),
    [
        ("quantity", True, "quantity: Input should be a valid integer (got true)"),
        ("quantity", "5", 'quantity: Input should be a valid integer (got "5")'),
        ("quantity", 5.5, "quantity: Input should be a valid integer (got 5.5)"),
        ("price", "2.5", 'price: Input should be a valid number (got "2.5")'),
        ("gift", "yes", 'gift: Input should be a valid boolean (got "yes")'),
        ("gift", 1, "gift: Input should be a valid boolean (got 1)"),
        ("on", 20240101, "on: Input should be a valid date (got 20240101)"),
        ("to", [1, 2], "to: Input should be an object (got [1, 2])"),
        ("to", {"x": "1", "y": 2}, 'to.x: Input should be a valid integer (got "1")'),
    ],
)
async def test_what_lax_validation_used_to_coerce_is_refused(
    field: str, value: JsonValue, problem: str
) -> None:
    good: JsonObject = {
        "quantity": 2,
        "price": 3,
        "gift": False,
        "on": "2024-05-01",
        "to": {"x": 1, "y": 2},
    }
    result = await call(order, {**good, field: value})
    assert result.is_error
    assert result.text == f"invalid arguments for tool 'order': {problem}"
    assert result.arguments == {**good, field: value}


@pytest.mark.anyio
async def test_what_json_can_only_spell_as_strings_and_objects_arrives_typed() -> None:
    sent: JsonObject = {
        "quantity": 2.0,
        "price": 3,
        "gift": True,
        "on": "2024-05-01",
        "to": {"x": 1, "y": 2},
    }
    result = await call(order, sent)
    assert not result.is_error, result.text
    assert result.content == "2 x 3.0 on 2024-05-01 to 1,2, gift=True"
    assert result.arguments == sent
