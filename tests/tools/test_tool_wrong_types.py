"""Wrong types given to ``@tool`` / ``Tool(...)``: each is a ``ConfigError`` that says
what to give, never a ``TypeError`` from deep inside, nor a message about another thing
(``@tool("lookup")`` used to say "tool name None is not usable")."""

from __future__ import annotations

import sys
import typing
from typing import Any

import pytest

from regiment.errors import ConfigError
from regiment.tools import Tool, Toolset, tool


def lookup(city: str, days: int = 1) -> str:
    """Today's weather for a city."""
    return city


def test_a_name_given_as_the_function_says_to_pass_name() -> None:
    bad: Any = "lookup"
    with pytest.raises(ConfigError) as caught:
        tool(bad)
    assert str(caught.value) == (
        "tool() got the str 'lookup' where the function goes; to name the tool, pass "
        "name=...: @tool(name='lookup')"
    )


@pytest.mark.parametrize("thing", [3, None, [lookup]])
def test_a_non_callable_is_not_a_tool(thing: Any) -> None:
    with pytest.raises(ConfigError) as caught:
        Tool(thing)
    assert str(caught.value) == (
        f"Tool() got the {type(thing).__name__} {thing!r} where the function goes; "
        "give a function (plain or async) with typed parameters"
    )


def test_a_name_or_description_that_is_not_text() -> None:
    bad: Any = 3
    with pytest.raises(
        ConfigError, match=r"^tool 'lookup': name must be text \(a str\), not the int 3$"
    ):
        Tool(lookup, name=bad)
    with pytest.raises(
        ConfigError,
        match=r"^tool 'lookup': description must be text \(a str\), or None for the "
        r"docstring's, not the list \['x'\]$",
    ):
        Tool(lookup, description=["x"])  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("option", "value", "message"),
    [
        ("retries", "2", "retries must be a whole number, 0 or more, not '2'"),
        ("retries", True, "retries must be a whole number, 0 or more, not True"),
        (
            "timeout",
            "5",
            "timeout must be a finite number of seconds > 0, or None for no limit, not '5'",
        ),
        ("backoff", "1", "backoff must be a number of seconds, 0 or more, not '1'"),
        ("max_backoff", None, "max_backoff must be a number of seconds, 0 or more, not None"),
        (
            "max_concurrency",
            2.5,
            "max_concurrency must be a whole number, 1 or more, or None for no limit, not 2.5",
        ),
        (
            "retry_on",
            ValueError,
            "retry_on takes a tuple of Exception subclasses, not <class 'ValueError'> (write retry_on=(ValueError,))",
        ),
        (
            "idempotency_key",
            "city",
            "idempotency_key takes a tuple of parameter names or a function of the arguments, not the str 'city' (write idempotency_key=('city',))",
        ),
        (
            "idempotency_key",
            ("city", 3),
            "idempotency_key takes a tuple of parameter names or a function of the arguments, not ('city', 3)",
        ),
    ],
)
def test_an_option_of_the_wrong_type_says_what_to_give(
    option: str, value: object, message: str
) -> None:
    options: Any = {option: value}
    with pytest.raises(ConfigError) as caught:
        tool(**options)(lookup)
    assert str(caught.value) == message


def test_options_of_the_right_type_still_make_a_tool() -> None:
    names: Any = ["city"]  # a list, as a team file gives it, is read as the tuple
    made = tool(
        retries=2,
        timeout=5,
        backoff=0,
        max_backoff=1.5,
        max_concurrency=1,
        retry_on=(ValueError,),
        idempotency_key=names,
    )(lookup)
    assert made.policy.retries == 2
    assert made.policy.idempotency_key == ("city",)
    assert made("Oslo") == "Oslo"


def test_a_toolset_approver_that_is_no_function_is_refused_when_made() -> None:
    # It was taken, and every call needing approval failed its step with "the approver
    # of tool 'lookup' raised TypeError: the first argument must be callable".
    bad: Any = "ask"
    with pytest.raises(ConfigError) as caught:
        Toolset("desk", [lookup], approver=bad)
    assert str(caught.value) == (
        "tool set 'desk': approver must be a function of the ApprovalRequest returning "
        "Approve(), Deny(reason=...) or EditArguments(arguments=...), or None; got the str 'ask'"
    )


class _Size(typing.TypedDict):  # typing's, not typing_extensions'
    width: int


def _sized(size: list[_Size]) -> str:
    """Take sizes."""
    return "ok"


def test_a_typing_typed_dict_before_python_3_12_says_which_to_use() -> None:
    # It said the type "cannot be described as JSON ... annotate it with a ... TypedDict":
    # the advice was the type it had. pydantic reads typing's TypedDict from 3.12 on.
    if sys.version_info >= (3, 12):
        assert tool(_sized).name == "_sized"
        return
    with pytest.raises(ConfigError) as caught:
        tool(_sized)
    assert str(caught.value) == (
        f"parameter 'size' of tool '_sized' has type list[{_Size.__module__}._Size], "
        "which holds a typing.TypedDict: before Python 3.12 pydantic reads only "
        "typing_extensions.TypedDict, so define it with that (from typing_extensions import "
        "TypedDict)"
    )
