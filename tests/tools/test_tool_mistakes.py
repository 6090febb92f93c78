"""Tools made of methods (from the bound method, not with ``@tool`` in the class body),
and options that are no tool option."""

from __future__ import annotations

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
