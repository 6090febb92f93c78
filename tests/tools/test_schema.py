"""The JSON Schema a tool's signature turns into, and the tools that cannot be built."""

from __future__ import annotations

import enum
import functools
from collections.abc import Callable
from typing import Annotated, Literal, NotRequired

import pytest
from pydantic import BaseModel, Field
from typing_extensions import TypedDict

from regiment._json import JsonObject
from regiment.errors import ConfigError
from regiment.tools import Tool, ToolDefinition, tool


class Colour(enum.Enum):
    RED = "red"
    BLUE = "blue"


class Address(BaseModel):
    street: str = Field(description="Street and number")
    zip_code: str | None = None


class LineItem(TypedDict):
    sku: str
    quantity: NotRequired[int]


class Opaque:
    """A plain class: pydantic has no schema for it."""


class Node(BaseModel):
    label: str
    children: list[Node] = []


def schema_of(fn: object) -> JsonObject:
    made = fn if isinstance(fn, Tool) else Tool(fn)  # type: ignore[arg-type]
    return made.definition.input_schema


def test_scalars_defaults_and_required() -> None:
    def lookup(key: str, limit: int = 10, ratio: float = 0.5, exact: bool = False) -> str:
        return key

    assert schema_of(lookup) == {
        "type": "object",
        "properties": {
            "key": {"type": "string"},
            "limit": {"type": "integer", "default": 10},
            "ratio": {"type": "number", "default": 0.5},
            "exact": {"type": "boolean", "default": False},
        },
        "required": ["key"],
        "additionalProperties": False,
    }


def test_no_parameters() -> None:
    def now() -> str:
        return "noon"

    assert schema_of(now) == {"type": "object", "properties": {}, "additionalProperties": False}


def test_descriptions_from_annotated_and_from_the_docstring() -> None:
    @tool
    def issue_refund(
        order_id: Annotated[str, Field(description="The order number")],
        amount: float,
        note: Annotated[str, Field(description="Wins over the docstring")] = "",
    ) -> str:
        """Refund an order in full.

        Only for orders that are eligible; check first.

        Args:
            order_id: ignored, Annotated says it already.
            amount: How much to refund,
                in euros.
            note: ignored too.

        Returns:
            A receipt.
        """
        return order_id

    assert issue_refund.description == (
        "Refund an order in full.\n\nOnly for orders that are eligible; check first."
    )
    assert issue_refund.definition == ToolDefinition(
        name="issue_refund",
        description=issue_refund.description,
        input_schema={
            "type": "object",
            "properties": {
                "order_id": {"type": "string", "description": "The order number"},
                "amount": {"type": "number", "description": "How much to refund, in euros."},
                "note": {"type": "string", "description": "Wins over the docstring", "default": ""},
            },
            "required": ["order_id", "amount"],
            "additionalProperties": False,
        },
    )


def _numpy_style(order_id: str, amount: float = 0.0) -> str:
    """Refund an order.

    Parameters
    ----------
    order_id : str
        The order number,
        as printed on the receipt.
    amount : float, optional
        How much to refund.

    Returns
    -------
    str
        A receipt.
    """
    return order_id


def _sphinx_style(order_id: str, amount: float = 0.0) -> str:
    """Refund an order.

    :param order_id: The order number,
        as printed on the receipt.
    :param float amount: How much to refund.
    :type order_id: str
    :returns: A receipt.
    """
    return order_id


@pytest.mark.parametrize("fn", [_numpy_style, _sphinx_style], ids=["numpy", "sphinx"])
def test_numpy_and_sphinx_docstrings_describe_the_parameters(fn: Callable[..., str]) -> None:
    # Only Google style was read: the whole Parameters section (or every :param:
    # line) was the tool's description, and no parameter had one of its own.
    refund = tool(fn)
    assert refund.description == "Refund an order."
    properties = refund.definition.input_schema["properties"]
    assert isinstance(properties, dict)
    described = {name: p["description"] for name, p in properties.items() if isinstance(p, dict)}
    assert described == {
        "order_id": "The order number, as printed on the receipt.",
        "amount": "How much to refund.",
    }


def test_a_plain_string_in_annotated_describes_the_parameter() -> None:
    # pydantic ignores it, so the schema had no description (or the docstring's).
    @tool
    def forecast(
        city: Annotated[str, "The city, as its people spell it"],
        days: Annotated[int, Field(description="Field wins"), "not this"] = 3,
    ) -> str:
        """Forecast.

        Args:
            city: the docstring's words, not these.
        """
        return city

    properties = forecast.definition.input_schema["properties"]
    assert properties == {
        "city": {"type": "string", "description": "The city, as its people spell it"},
        "days": {"type": "integer", "description": "Field wins", "default": 3},
    }


def test_enums_literals_and_optionals() -> None:
    def paint(
        colour: Colour,
        finish: Literal["matt", "gloss"] = "matt",
        coats: int | None = None,
    ) -> str:
        return "ok"

    assert schema_of(paint) == {
        "type": "object",
        "$defs": {"Colour": {"type": "string", "enum": ["red", "blue"]}},
        "properties": {
            "colour": {"$ref": "#/$defs/Colour"},
            "finish": {"type": "string", "enum": ["matt", "gloss"], "default": "matt"},
            "coats": {"anyOf": [{"type": "integer"}, {"type": "null"}], "default": None},
        },
        "required": ["colour"],
        "additionalProperties": False,
    }


def test_nested_models_typed_dicts_and_containers() -> None:
    def ship(
        to: Address, items: list[LineItem], weights: dict[str, float], tags: tuple[str, ...] = ()
    ) -> str:
        return "ok"

    assert schema_of(ship) == {
        "type": "object",
        "$defs": {
            "Address": {
                "type": "object",
                "properties": {
                    "street": {"type": "string", "description": "Street and number"},
                    "zip_code": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None},
                },
                "required": ["street"],
                "additionalProperties": False,  # a nested model is closed too
            },
            "LineItem": {
                "type": "object",
                "properties": {"sku": {"type": "string"}, "quantity": {"type": "integer"}},
                "required": ["sku"],
                "additionalProperties": False,
            },
        },
        "properties": {
            "to": {"$ref": "#/$defs/Address"},
            "items": {"type": "array", "items": {"$ref": "#/$defs/LineItem"}},
            "weights": {"type": "object", "additionalProperties": {"type": "number"}},
            "tags": {"type": "array", "items": {"type": "string"}, "default": []},
        },
        "required": ["to", "items", "weights"],
        "additionalProperties": False,
    }


def test_recursive_model_keeps_its_definition() -> None:
    def plant(tree: Node) -> str:
        return tree.label

    schema = schema_of(plant)
    assert schema["properties"] == {"tree": {"$ref": "#/$defs/Node"}}
    assert schema["$defs"] == {
        "Node": {
            "type": "object",
            "properties": {
                "label": {"type": "string"},
                "children": {"type": "array", "items": {"$ref": "#/$defs/Node"}, "default": []},
            },
            "required": ["label"],
            "additionalProperties": False,
        }
    }


def test_only_title_keywords_are_dropped_not_properties_called_title() -> None:
    def publish(title: str, examples: Annotated[list[str], Field(examples=[["title"]])]) -> str:
        return title

    assert schema_of(publish) == {
        "type": "object",
        "properties": {
            "title": {"type": "string"},
            "examples": {"type": "array", "items": {"type": "string"}, "examples": [["title"]]},
        },
        "required": ["title", "examples"],
        "additionalProperties": False,
    }


def test_parameter_names_that_clash_with_pydantic_are_fine() -> None:
    def odd(json: str, schema: int, model_config: bool = True) -> str:
        return json

    properties = schema_of(odd)["properties"]
    assert isinstance(properties, dict)
    assert list(properties) == ["json", "schema", "model_config"]


def test_field_as_default_value() -> None:
    def page(size: int = Field(20, description="Rows per page", ge=1, le=100)) -> str:
        return str(size)

    assert schema_of(page)["properties"] == {
        "size": {
            "type": "integer",
            "description": "Rows per page",
            "default": 20,
            "minimum": 1,
            "maximum": 100,
        }
    }


def test_name_and_description_can_be_overridden() -> None:
    @tool(name="find-order", description="Look an order up.")
    def lookup(order_id: str) -> str:
        """Not this."""
        return order_id

    assert (lookup.name, lookup.description) == ("find-order", "Look an order up.")
    assert lookup.definition.name == "find-order"


def test_partial_functions_need_a_name_and_keep_their_schema() -> None:
    def scale(value: float, factor: float) -> float:
        """Multiply."""
        return value * factor

    doubled = Tool(functools.partial(scale, factor=2.0), name="double")
    assert doubled.description == "Multiply."
    assert doubled.definition.input_schema["required"] == ["value"]


@pytest.mark.anyio
async def test_what_a_partial_binds_is_neither_shown_to_the_model_nor_open_to_change() -> None:
    # The bound keyword was a parameter with its value as the default: the schema sent
    # to the provider carried it (an API key, say), and the model could send another.
    def send(to: str, api_key: str) -> str:
        """Send a message."""
        return f"sent to {to} with {api_key[:3]}"

    sender = Tool(functools.partial(send, api_key="sk-secret"), name="send")
    assert sender.definition.input_schema == {
        "type": "object",
        "properties": {"to": {"type": "string"}},
        "required": ["to"],
        "additionalProperties": False,
    }
    assert (await sender.call({"to": "ana"}, call_id="c1")).content == "sent to ana with sk-"
    changed = await sender.call({"to": "ana", "api_key": "mine"}, call_id="c2")
    assert (changed.is_error, changed.error_type) == (True, "invalid_arguments")


def test_missing_annotation_is_a_config_error() -> None:
    def untyped(order_id) -> str:  # type: ignore[no-untyped-def]
        return str(order_id)

    with pytest.raises(ConfigError, match="parameter 'order_id' of tool 'untyped' has no type"):
        Tool(untyped)


def test_var_args_are_a_config_error() -> None:
    def spread(*names: str) -> str:
        return ""

    def options(**values: int) -> str:
        return ""

    # It said "takes *values or **values" of either.
    with pytest.raises(ConfigError, match=r"tool 'spread' takes \*names; a tool needs named"):
        Tool(spread)
    with pytest.raises(ConfigError, match=r"tool 'options' takes \*\*values; a tool needs named"):
        Tool(options)


def test_names_a_model_api_cannot_take_are_config_errors() -> None:
    with pytest.raises(ConfigError, match="pass name="):
        Tool(lambda: "x")
    with pytest.raises(ConfigError, match="not usable"):
        Tool(lambda: "x", name="has space")
    with pytest.raises(ConfigError, match="not usable"):
        Tool(lambda: "x", name="x" * 65)


def test_unresolvable_annotation_is_a_config_error() -> None:
    class Local(BaseModel):
        a: int

    def uses_local(item: Local) -> str:
        return ""

    with pytest.raises(ConfigError, match="cannot read the signature of tool 'uses_local'"):
        Tool(uses_local)


def test_unschemable_type_is_a_config_error() -> None:
    def takes_object(thing: Opaque) -> str:
        return ""

    with pytest.raises(ConfigError, match="parameter 'thing' of tool 'takes_object' has type"):
        Tool(takes_object)


def test_idempotency_key_must_name_parameters() -> None:
    def refund(order_id: str) -> str:
        return order_id

    with pytest.raises(ConfigError, match="choose among: order_id"):
        Tool(refund, idempotency_key=("order",))


async def _over_limit(arguments: dict[str, object]) -> bool:
    return True


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"timeout": 0}, "timeout must be a finite number of seconds > 0"),
        ({"timeout": float("nan")}, "timeout must be a finite number of seconds > 0"),
        ({"retries": -1}, "retries must be 0 or more"),
        ({"backoff": -0.1}, "backoff and max_backoff"),
        ({"max_concurrency": 0}, "max_concurrency must be 1 or more"),
        ({"retry_on": (KeyboardInterrupt,)}, "retry_on takes Exception subclasses"),
        # An async one was called and never awaited: its coroutine was taken for a
        # decision (always approve-first) or refused at the first call, with a warning.
        (
            {"requires_approval": _over_limit},
            "requires_approval takes a plain \\(sync\\) function of the call's arguments, "
            "not the async function '_over_limit'",
        ),
        ({"idempotency_key": _over_limit}, "idempotency_key takes a plain \\(sync\\) function"),
    ],
)
def test_out_of_range_options_are_config_errors(options: dict[str, object], message: str) -> None:
    def noop() -> None:
        return None

    with pytest.raises(ConfigError, match=message):
        Tool(noop, **options)  # type: ignore[arg-type]
