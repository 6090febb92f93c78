"""A key the model sends that a nested object does not have is refused, as at the top:
the schema says ``additionalProperties: false`` for each nested model, dataclass and
``TypedDict``, and the model is told which field is unknown and what the object has.
A class that chose its own ``extra`` (``"allow"``, ``"ignore"``) keeps its choice."""

from __future__ import annotations

import dataclasses

import pytest
from pydantic import BaseModel, ConfigDict
from typing_extensions import TypedDict

from regiment._json import JsonObject
from regiment.tools import Tool, ToolResult

pytestmark = pytest.mark.anyio


class Address(BaseModel):
    street: str
    zip_code: str


class Open(BaseModel):
    model_config = ConfigDict(extra="allow")
    name: str


class Lenient(BaseModel):
    model_config = ConfigDict(extra="ignore")
    name: str


class Sized(TypedDict):
    width: int


@dataclasses.dataclass
class Weight:
    grams: int


class Parcel(BaseModel):  # a default model holding the others: each is closed all the same
    size: Sized
    weight: Weight
    to: list[Address]
    note: Open | None = None


received: list[tuple[object, object]] = []


def ship(to: Address, parcel: Parcel | None = None) -> str:
    """Ship."""
    received.append((to, parcel))
    return "shipped"


def tag(label: Open, other: Lenient) -> str:
    """Tag."""
    received.append((label, other))
    return "tagged"


async def call(fn: object, arguments: JsonObject) -> ToolResult:
    received.clear()
    return await Tool(fn).call(arguments, call_id="c")  # type: ignore[arg-type]


def defs(fn: object) -> dict[str, object]:
    schema = Tool(fn).definition.input_schema  # type: ignore[arg-type]
    found = schema["$defs"]
    assert isinstance(found, dict)
    return {name: d.get("additionalProperties") for name, d in found.items()}  # type: ignore[union-attr]


def test_the_schema_closes_each_nested_object_but_ones_that_chose() -> None:
    assert defs(ship) == {
        "Address": False,
        "Open": True,  # extra="allow": it takes any key
        "Parcel": False,
        "Sized": False,
        "Weight": False,
    }
    assert defs(tag) == {"Open": True, "Lenient": None}  # "ignore", chosen: as it was


async def test_a_misspelt_nested_key_is_refused_and_the_body_never_runs() -> None:
    result = await call(ship, {"to": {"street": "Main St 1", "zipcode": "1234"}})
    assert received == []
    assert result.is_error
    assert result.error_type == "invalid_arguments"
    assert result.content == (
        "invalid arguments for tool 'ship': to.zip_code: Field required, send a string; "
        'to.zipcode: no such field, to has only street, zip_code (got "1234")'
    )


async def test_unknown_keys_deep_down_are_each_named_with_what_is_there() -> None:
    parcel: JsonObject = {
        "size": {"width": 3, "height": 4},
        "weight": {"grams": 5, "kilos": 1},
        "to": [{"street": "s", "zip_code": "z"}, {"street": "s", "zip_code": "z", "floor": 2}],
    }
    result = await call(ship, {"to": {"street": "s", "zip_code": "z"}, "parcel": parcel})
    assert received == []
    assert result.content == (
        "invalid arguments for tool 'ship': "
        "parcel.size.height: no such field, parcel.size has only width (got 4); "
        "parcel.weight.kilos: no such field, parcel.weight has only grams (got 1); "
        "parcel.to[1].floor: no such field, parcel.to[1] has only street, zip_code (got 2)"
    )


async def test_a_class_that_chose_allow_or_ignore_keeps_its_choice() -> None:
    result = await call(
        tag, {"label": {"name": "a", "colour": "red"}, "other": {"name": "b", "x": 1}}
    )
    assert (result.is_error, result.content) == (False, "tagged")
    ((label, other),) = received
    assert isinstance(label, Open)
    assert label.model_extra == {"colour": "red"}  # allowed, and kept
    assert isinstance(other, Lenient)
    assert other.model_dump() == {"name": "b"}  # ignored, as its class says
    parcel: JsonObject = {
        "size": {"width": 1},
        "weight": {"grams": 1},
        "to": [],
        "note": {"name": "n", "k": 1},
    }
    result = await call(ship, {"to": {"street": "s", "zip_code": "z"}, "parcel": parcel})
    assert not result.is_error  # an open class inside a closed one is still open


async def test_valid_nested_arguments_arrive_as_the_user_s_own_classes() -> None:
    parcel: JsonObject = {
        "size": {"width": 1},
        "weight": {"grams": 2},
        "to": [{"street": "s", "zip_code": "z"}],
    }
    result = await call(ship, {"to": {"street": "s", "zip_code": "z"}, "parcel": parcel})
    assert not result.is_error
    ((to, got),) = received
    assert type(to) is Address
    assert to == Address(street="s", zip_code="z")  # equal to one the user builds
    assert type(got) is Parcel
    assert got.weight == Weight(grams=2)
    assert got.size == {"width": 1}
