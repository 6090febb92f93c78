"""``@tool``: the decorator form of ``Tool(...)``."""

from __future__ import annotations

from collections.abc import Callable
from typing import ParamSpec, TypeVar, Unpack, overload

from regiment.tools._made_of import check_made_of
from regiment.tools._policy import ToolOptions
from regiment.tools._tool import Tool

__all__ = ("tool",)

P = ParamSpec("P")
R = TypeVar("R")


@overload
def tool(fn: Callable[P, R], /) -> Tool[P, R]: ...
@overload
def tool(
    *, name: str | None = None, description: str | None = None, **options: Unpack[ToolOptions]
) -> Callable[[Callable[P, R]], Tool[P, R]]: ...
def tool(
    fn: Callable[P, R] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    **options: Unpack[ToolOptions],
) -> Tool[P, R] | Callable[[Callable[P, R]], Tool[P, R]]:
    """Turn a typed function into a ``Tool``; use bare or with options.

    ``@tool`` or ``@tool(name=..., description=..., timeout=..., retries=...,
    retry_on=(...), backoff=..., max_concurrency=..., requires_approval=...,
    idempotency_key=("order_id",), on_tool_error="raise")``. See ``Tool`` for what each does.
    The result is still callable as the function itself.
    """
    if fn is not None:
        check_made_of(fn, name, description, maker="tool()")
        return Tool(fn, name=name, description=description, **options)

    def decorate(inner: Callable[P, R]) -> Tool[P, R]:
        return Tool(inner, name=name, description=description, **options)

    return decorate
