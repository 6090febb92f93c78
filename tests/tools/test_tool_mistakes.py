"""Mistakes in making a tool: ``@tool`` on a method in its class body (a tool is made of
the bound method), an option that is no tool option, a docstring entry for no parameter."""

from __future__ import annotations

import functools
import logging
from typing import Any

import pytest

from regiment.errors import ConfigError
from regiment.tools import Tool, Toolset, tool

pytestmark = pytest.mark.anyio


class Ledger:
    def __init__(self) -> None:
        self.total = 10

    def add(self, amount: int) -> int:
        """Add to the ledger.

        Args:
            amount: what to add.
        """
        self.total += amount
        return self.total

    async def balance(self) -> int:
        """The ledger's balance."""
        return self.total


def test_tool_in_a_class_body_says_to_bind_the_method() -> None:
    # It said "parameter 'self' of tool 'add' has no type annotation; annotate it",
    # which would put self in the schema for the model to fill in.
    with pytest.raises(ConfigError) as caught:
        tool(Ledger.add)
    assert str(caught.value) == (
        "tool 'add' is a method (its first parameter is 'self'): @tool in a class body has "
        "no instance to call it on; make the tool from the bound method instead, "
        "Tool(instance.method), or make it a function"
    )

    def by_class(cls, n: int) -> int:  # type: ignore[no-untyped-def]
        """Unbound, as a classmethod's function is in its class body."""
        return n

    with pytest.raises(ConfigError, match=r"first parameter is 'cls'"):
        Tool(by_class)


async def test_bound_methods_are_tools() -> None:
    ledger = Ledger()
    tools = Toolset("ledger", [Tool(ledger.add), Tool(ledger.balance)])
    (add, balance) = tools.definitions
    assert add.input_schema["properties"] == {
        "amount": {"type": "integer", "description": "what to add."}
    }
    assert balance.input_schema["properties"] == {}
    assert (await tools.call("add", {"amount": 5}, call_id="c1")).text == "15"
    assert (await tools.call("balance", {}, call_id="c2")).text == "15"


def test_an_annotated_self_is_an_ordinary_parameter() -> None:
    def greet(self: str) -> str:
        """Greet someone named self."""
        return self

    assert Tool(greet).definition.input_schema["required"] == ["self"]


def test_a_misspelt_option_is_named_with_the_option_meant() -> None:
    # It was a TypeError, "ToolPolicy.__init__() got an unexpected keyword argument
    # 'timout'", naming a class the user never wrote.
    def lookup(city: str) -> str:
        """Weather."""
        return city

    with pytest.raises(ConfigError) as caught:
        tool(timout=5)(lookup)  # type: ignore[call-overload]
    assert (
        str(caught.value)
        == "tool 'lookup': 'timout' is not a tool option (did you mean 'timeout'?)"
    )
    with pytest.raises(
        ConfigError, match=r"'colour' is not a tool option \(the options are: timeout, "
    ):
        Tool(lookup, colour="red")  # type: ignore[call-arg]


def test_a_docstring_entry_for_no_parameter_is_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    # A misspelt Args: entry was dropped silently: the model saw `days` undescribed.
    def forecast(city: str, days: int = 1) -> str:
        """Forecast for a city.

        Args:
            city: The city.
            dayz: How many days.
        """
        return city

    with caplog.at_level(logging.WARNING, logger="regiment.tools"):
        made = Tool(forecast)
    schema: Any = made.definition.input_schema
    assert "description" not in schema["properties"]["days"]
    assert [r.getMessage() for r in caplog.records] == [
        "tool 'forecast': its docstring describes 'dayz', which is not one of its parameters, "
        "so the model is not shown that description; did you mean 'days'?"
    ]


def test_a_parameter_a_partial_binds_may_be_described(caplog: pytest.LogCaptureFixture) -> None:
    def charge(order_id: str, api_key: str) -> str:
        """Charge an order.

        Args:
            order_id: The order.
            api_key: The payment provider's key (bound by the application).
        """
        return order_id

    with caplog.at_level(logging.WARNING, logger="regiment.tools"):
        made = Tool(functools.partial(charge, api_key="k"), name="charge")
    schema: Any = made.definition.input_schema
    assert list(schema["properties"]) == ["order_id"]
    assert caplog.records == []
