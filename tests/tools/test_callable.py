"""A ``@tool`` stays the function it decorates: users unit test their tools by calling them."""

from __future__ import annotations

import inspect

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel

from regiment.tools import Tool, Toolset, tool


class Order(BaseModel):
    id: str
    total: float


@tool
def add(a: int, b: int = 1) -> int:
    """Add two numbers."""
    return a + b


@tool(name="order_total", timeout=5)
async def total(order: Order, /, *, discount: float = 0.0) -> float:
    """What an order costs after a discount."""
    return order.total - discount


@given(st.integers(), st.integers())
def test_a_sync_tool_is_called_as_the_function(a: int, b: int) -> None:
    assert add(a, b) == a + b
    assert add(a) == a + 1
    assert add(b=b, a=a) == a + b


@pytest.mark.anyio
async def test_an_async_tool_is_awaited_as_the_function() -> None:
    # No validation on this path: the caller passes real Python values, as to the function.
    assert await total(Order(id="o1", total=10.0), discount=2.5) == 7.5
    with pytest.raises(TypeError):
        await total(Order(id="o1", total=10.0), 2.5)  # type: ignore[call-arg]  # keyword-only


def test_the_tool_looks_like_its_function() -> None:
    assert add.__name__ == "add"
    assert add.__doc__ == "Add two numbers."
    assert total.__name__ == "total"  # the function's name; the model calls it order_total
    assert total.name == "order_total"
    assert inspect.signature(add) == inspect.signature(add.function)
    assert add.__wrapped__ is add.function
    assert add.function(2, 3) == 5


@pytest.mark.anyio
async def test_the_callable_tool_still_works_as_a_tool() -> None:
    assert isinstance(add, Tool)
    result = await add.call({"a": 2, "b": 5}, call_id="c1")
    assert (result.is_error, result.content) == (False, 7)
    tools = Toolset("maths", [add, total])
    assert tools.names == ("add", "order_total")
    by_set = await tools.call("order_total", {"order": {"id": "o1", "total": 4}}, call_id="c2")
    assert (by_set.is_error, by_set.content) == (False, 4.0)
    renamed = add.renamed("plus")
    assert renamed(1, 1) == 2
    assert renamed.name == "plus"
