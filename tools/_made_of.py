"""What ``@tool`` and ``Tool(...)`` are given: a function, and text for its name and
description, refused with what to give (``@tool("lookup")`` used to say "tool name
None is not usable")."""

from __future__ import annotations

import functools
from typing import Any

from regiment.errors import ConfigError

__all__ = ("check_approver", "check_made_of")


def check_made_of(fn: object, name: object, description: object, *, maker: str) -> Any:
    """Refuse a tool made of something that is no function, or named with no text.

    Args:
        fn: what was given as the tool's function.
        name: the ``name=`` given, if any.
        description: the ``description=`` given, if any.
        maker: ``"tool()"`` (the decorator) or ``"Tool()"``, for the message.

    Returns:
        The function whose name and docstring the tool takes (a partial's own function).

    Raises:
        ConfigError: saying what to give instead.
    """
    if not callable(fn):
        got = f"{maker} got the {type(fn).__name__} {fn!r:.100} where the function goes"
        if isinstance(fn, str):
            how = f"@tool(name={fn!r})" if maker == "tool()" else f"Tool(fn, name={fn!r})"
            raise ConfigError(f"{got}; to name the tool, pass name=...: {how}")
        raise ConfigError(f"{got}; give a function (plain or async) with typed parameters")
    target = fn.func if isinstance(fn, functools.partial) else fn
    owner = f"tool {getattr(target, '__name__', '?')!r}"
    if name is not None and not isinstance(name, str):
        raise ConfigError(
            f"{owner}: name must be text (a str), not the {type(name).__name__} {name!r:.100}"
        )
    if description is not None and not isinstance(description, str):
        raise ConfigError(
            f"{owner}: description must be text (a str), or None for the docstring's, "
            f"not the {type(description).__name__} {description!r:.100}"
        )
    return target


def check_approver(toolset: str, approver: object) -> None:
    """Refuse a tool set's approver that is no function (it was taken, and each call
    needing approval failed its step: "the approver ... raised TypeError").

    Raises:
        ConfigError: saying what an approver is.
    """
    if approver is not None and not callable(approver):
        raise ConfigError(
            f"tool set {toolset!r}: approver must be a function of the ApprovalRequest "
            "returning Approve(), Deny(reason=...) or EditArguments(arguments=...), "
            f"or None; got the {type(approver).__name__} {approver!r:.80}"
        )
