"""Slips with the Python API are a ``ConfigError`` that says what to pass.

Each of these raised Python's or msgspec's own ``TypeError`` from inside, naming
neither the call nor what it takes (``Unexpected keyword argument 'foo'``, ``'int'
object is not callable``, ``object int can't be used in 'await' expression``,
``tool_call_response() missing 1 required positional argument: 'arguments'``). They
stay ``TypeError`` s too, for code that caught those.
"""

from __future__ import annotations

import warnings

import msgspec
import pytest

from regiment import (
    Approve,
    Budget,
    Deny,
    Price,
    ScriptedModel,
    Toolset,
    Worker,
    run_main,
    tool,
    tool_call_response,
)
from regiment.errors import ConfigError
from regiment.hierarchy.guard import max_length
from regiment.tools import ApprovalDecision

BUDGET_FIELDS = (
    "model_calls, tool_calls, tokens, input_tokens, output_tokens, usd, replans, rounds, "
    "wall_clock, on_exhausted"
)


def refused(make: object, *args: object, **kwargs: object) -> str:
    assert callable(make)
    with pytest.raises(ConfigError) as caught:
        make(*args, **kwargs)
    assert isinstance(caught.value, TypeError)
    return str(caught.value)


def test_a_budget_field_it_has_not_names_the_ones_it_has() -> None:
    assert refused(Budget, foo=1) == f"Budget has no field 'foo'; its fields are {BUDGET_FIELDS}"
    assert refused(Budget, model_call=3, tool_calls=2) == (
        f"Budget has no field 'model_call' (did you mean 'model_calls'?); "
        f"its fields are {BUDGET_FIELDS}"
    )
    assert refused(Budget, 3) == (
        "Budget takes keyword arguments only (Budget(model_calls=...)), got 1 positional; "
        f"its fields are {BUDGET_FIELDS}"
    )


def test_a_price_field_it_has_not_names_the_ones_it_has() -> None:
    assert refused(Price, input=3.0, outptu=15.0) == (
        "Price has no field 'outptu' (did you mean 'output'?); "
        "its fields are input, output, cache_read, cache_write"
    )


def test_good_config_structs_are_built_and_checked_as_before() -> None:
    assert Budget(model_calls=3, on_exhausted="raise").model_calls == 3
    assert Price(input=3.0, output=15.0).output == 15.0
    with pytest.raises(ConfigError, match="model_calls must be a whole number"):
        Budget(model_calls=-1)


async def main(x: int = 1) -> int:
    return x


def test_run_main_given_no_async_function_says_what_to_give() -> None:
    assert refused(run_main, 1) == (
        "run_main(main) takes an async function (async def main(): ...); got an int"
    )
    assert refused(run_main, lambda: 1) == (
        "run_main(main): main() returned an int, not an awaitable: give run_main an async "
        "function (async def main(): ...)"
    )


def test_run_main_given_a_coroutine_says_to_give_the_function() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "coroutine 'main' was never awaited" either
        said = refused(run_main, main())
    assert (
        said
        == "run_main takes the async function, not a call of it: run_main(main), not run_main(main())"
    )
    assert run_main(main, 5) == 5


def test_tool_call_response_given_no_arguments_or_no_name_says_what_to_give() -> None:
    assert refused(tool_call_response, "lookup") == (
        "tool_call_response('lookup') needs the call's arguments too, a dict: "
        "tool_call_response('lookup', {...}) ({} for a tool that takes none)"
    )
    assert refused(tool_call_response, 7, {}) == (
        "tool_call_response(name, arguments) takes the tool's name (a str) first; got an int"
    )
    assert tool_call_response("lookup", {}).tool_calls[0].arguments == {}


def lookup(city: str) -> str:
    """Today's weather for a city."""
    return city


def test_a_toolset_given_one_tool_or_a_string_says_to_put_it_in_a_list() -> None:
    # Toolset("w", "lookup") said "tools[0] is the str 'l'"; Toolset("w", 3) raised
    # "'int' object is not iterable"; Toolset("w", lookup) the same for a function.
    def said(tools: object, **options: object) -> str:
        with pytest.raises(ConfigError) as caught:
            Toolset("w", tools, **options)  # type: ignore[arg-type]
        return str(caught.value)

    assert said("lookup") == (
        "tool set 'w': tools must be a list of tools; got the str 'lookup' "
        "(put it in a list: Toolset('w', [...]))"
    )
    assert said(lookup) == (
        "tool set 'w': tools must be a list of tools; got the function lookup "
        "(put it in a list: Toolset('w', [lookup]))"
    )
    assert said(tool(lookup)).endswith(
        "got the tool lookup (put it in a list: Toolset('w', [lookup]))"
    )
    assert said(3).startswith("tool set 'w': tools must be a list of tools; got the int 3")
    # a comparison's TypeError: "'<' not supported between instances of 'str' and 'int'"
    assert said([lookup], max_concurrency="2") == (
        "max_concurrency must be a whole number, 1 or more, or None for no limit, not '2'"
    )
    assert Toolset("w", (t for t in [lookup])).names == ("lookup",)


def test_a_worker_name_not_text_says_what_a_name_is() -> None:
    # It was "TypeError: 'int' object is not iterable".
    with pytest.raises(ConfigError) as caught:
        Worker(name=3, description="d", model=ScriptedModel(["x"]))  # type: ignore[arg-type]
    assert str(caught.value) == (
        "Worker: name must be non-empty letters, digits, '_' or '-'; got 3"
    )


def test_a_field_left_out_names_the_ones_needed() -> None:
    # msgspec's "Missing required argument 'output'" named neither the class nor the form.
    assert refused(Price, input=3.0) == "Price needs output too: Price(input=..., output=...)"
    assert refused(Deny) == "Deny needs reason too: Deny(reason=...)"


def test_an_approval_decision_given_an_argument_it_does_not_take_says_so() -> None:
    # Approve("yes") said "Extra positional arguments provided". (A Deny or EditArguments
    # holding the wrong kind is refused where an approver returns it, naming the approver:
    # tests/hierarchy/test_approvals.py.)
    assert refused(Approve, "yes") == "Approve takes no arguments: Approve()"
    assert refused(Deny, "over the limit", "again") == (
        "Deny takes at most 1 positional (reason), got 2 positional; its fields are reason"
    )
    assert Deny("over the limit") == Deny(reason="over the limit")
    decided = msgspec.json.decode(b'{"type": "deny", "reason": "no"}', type=ApprovalDecision)
    assert decided == Deny(reason="no")  # a decision read back is built as before


def test_max_length_given_no_number_says_so() -> None:
    # It was "'<' not supported between instances of 'str' and 'int'".
    with pytest.raises(ConfigError) as caught:
        max_length("500")  # type: ignore[arg-type]
    assert str(caught.value) == (
        "max_length: limit must be at least 1, a whole number of characters, not '500'"
    )
