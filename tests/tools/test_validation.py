"""Invalid arguments never reach the body, and the model is told exactly what is wrong."""

from __future__ import annotations

import string
from functools import partial
from typing import Literal, cast

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from regiment._json import JsonObject, JsonValue
from regiment.tools import Tool, ToolResult, tool

FIELDS = ("order_id", "amount", "kind")
KINDS = ("full", "partial")


class Address(BaseModel):
    street: str
    zip_code: str | None = None


def make_refund_tool() -> tuple[Tool[..., object], list[JsonObject]]:
    ran: list[JsonObject] = []

    @tool
    async def issue_refund(
        order_id: str, amount: float, kind: Literal["full", "partial"], note: str | None = None
    ) -> str:
        """Refund an order."""
        ran.append({"order_id": order_id, "amount": amount, "kind": kind, "note": note})
        return "refunded"

    return issue_refund, ran


async def call(made: Tool[..., object], arguments: JsonObject) -> ToolResult:
    return await made.call(arguments, call_id="call-1")


# -- examples -----------------------------------------------------------------


@pytest.mark.anyio
async def test_every_wrong_field_is_named_with_what_was_expected() -> None:
    made, ran = make_refund_tool()
    result = await call(made, {"amount": "ten", "kind": "some", "notes": "x"})
    assert ran == []
    assert result.is_error
    assert result.error_type == "invalid_arguments"
    assert result.attempts == 0
    assert result.content == (
        "invalid arguments for tool 'issue_refund': "
        "order_id: Field required, send a string; "
        'amount: Input should be a valid number (got "ten"); '
        'kind: Input should be "full" or "partial" (got "some"); '
        'notes: no such field, the arguments have only order_id, amount, kind, note (got "x")'
    )
    assert result.arguments == {"amount": "ten", "kind": "some", "notes": "x"}


@pytest.mark.anyio
async def test_nested_locations_are_spelled_out() -> None:
    @tool
    def ship(to: Address, parcels: list[int]) -> str:
        return "shipped"

    result = await call(ship, {"to": {"zip_code": 7}, "parcels": [1, "two"]})
    assert result.content == (
        "invalid arguments for tool 'ship': "
        "to.street: Field required, send a string; "
        "to.zip_code: Input should be a valid string (got 7); "
        'parcels[1]: Input should be a valid integer (got "two")'
    )


@pytest.mark.anyio
async def test_long_inputs_are_shortened_in_the_message() -> None:
    made, _ = make_refund_tool()
    result = await call(made, {"order_id": "1", "amount": "x" * 500, "kind": "full"})
    assert isinstance(result.content, str)
    assert '(got "xxxx' in result.content
    assert "...)" in result.content
    assert len(result.content) < 250


@pytest.mark.anyio
async def test_arguments_that_are_not_an_object() -> None:
    made, ran = make_refund_tool()
    result = await made.call(["88213"], call_id="c")  # type: ignore[arg-type]
    assert ran == []
    assert result.content == (
        "invalid arguments for tool 'issue_refund': arguments must be a JSON object "
        'with order_id, amount, kind, note (got ["88213"])'
    )
    assert result.arguments == {}


@pytest.mark.anyio
async def test_valid_arguments_run_with_defaults_and_are_recorded_as_sent() -> None:
    made, ran = make_refund_tool()
    result = await call(made, {"order_id": "88213", "amount": 12, "kind": "full"})
    assert not result.is_error
    assert result.content == "refunded"
    assert ran == [{"order_id": "88213", "amount": 12.0, "kind": "full", "note": None}]
    assert result.arguments == {"order_id": "88213", "amount": 12, "kind": "full"}


@pytest.mark.anyio
async def test_models_arrive_as_models_and_positional_only_parameters_work() -> None:
    seen: list[object] = []

    @tool
    def ship(to: Address, /, express: bool = False) -> str:
        seen.append((to, express))
        return "shipped"

    result = await call(ship, {"to": {"street": "Main 1"}, "express": True})
    assert result.content == "shipped"
    assert seen == [(Address(street="Main 1"), True)]
    assert result.arguments == {"to": {"street": "Main 1"}, "express": True}


# -- properties -----------------------------------------------------------------

# No "; " inside values: the test splits the message into its problems on it.
safe_text = st.text(alphabet=string.ascii_letters + string.digits + " _-", max_size=8)
names = st.from_regex(r"\A[a-z][a-z_]{0,11}\Z").filter(lambda n: n not in (*FIELDS, "note"))
json_scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | safe_text
json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(safe_text, inner, max_size=3),
    max_leaves=6,
)
# Values each field must refuse (pydantic's lax mode would accept "12" or True as a number;
# validation is strict, as the schema says).
WRONG: dict[str, st.SearchStrategy[object]] = {
    "order_id": st.integers()
    | st.floats(allow_nan=False)
    | st.booleans()
    | st.none()
    | st.lists(safe_text, max_size=2),
    "amount": st.text(alphabet=string.ascii_letters, max_size=8).map(lambda s: "x" + s)
    | st.floats(allow_nan=False, allow_infinity=False).map(str)  # "12.5": a string, not a number
    | st.booleans()
    | st.none()
    | st.lists(st.integers(), max_size=2)
    | st.dictionaries(safe_text, st.integers()),
    "kind": safe_text.filter(lambda s: s not in KINDS) | st.integers() | st.booleans() | st.none(),
}
RIGHT: dict[str, st.SearchStrategy[object]] = {
    "order_id": st.text(max_size=10),
    "amount": st.floats(allow_nan=False, allow_infinity=False) | st.integers(-(10**6), 10**6),
    "kind": st.sampled_from(KINDS),
}


@st.composite
def bad_arguments(draw: st.DrawFn) -> tuple[JsonObject, frozenset[str], frozenset[str]]:
    """Arguments with at least one problem, plus which fields are missing and which are wrong."""
    arguments: JsonObject = {}
    missing: set[str] = set()
    wrong: set[str] = set()
    for field in FIELDS:
        how = draw(st.sampled_from(("right", "missing", "wrong")))
        if how == "missing":
            missing.add(field)
        elif how == "wrong":
            wrong.add(field)
            arguments[field] = cast(JsonValue, draw(WRONG[field]))
        else:
            arguments[field] = cast(JsonValue, draw(RIGHT[field]))
    extras = draw(st.dictionaries(names, json_values, max_size=2))
    arguments.update(extras)
    wrong.update(extras)
    if not missing and not wrong:
        field = draw(st.sampled_from(FIELDS))
        del arguments[field]
        missing.add(field)
    return arguments, frozenset(missing), frozenset(wrong)


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
@settings(max_examples=150, deadline=None)
@given(case=bad_arguments())
def test_invalid_arguments_never_run_the_body(
    backend: str, case: tuple[JsonObject, frozenset[str], frozenset[str]]
) -> None:
    arguments, missing, wrong = case
    made, ran = make_refund_tool()
    result = anyio.run(partial(call, made, arguments), backend=backend)
    assert ran == []
    assert result.is_error
    assert result.error_type == "invalid_arguments"
    assert result.attempts == 0
    assert isinstance(result.content, str)
    assert result.content.startswith("invalid arguments for tool 'issue_refund': ")
    problems = result.content.removeprefix("invalid arguments for tool 'issue_refund': ")
    named = {_field_of(problem) for problem in problems.split("; ")}
    assert named == missing | wrong
    for field in missing:
        assert f"{field}: Field required" in problems


def _field_of(problem: str) -> str:
    """``"to.street: Field required"`` -> ``"to"``."""
    return problem.split(":", 1)[0].split("[", 1)[0].split(".", 1)[0]


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
@settings(max_examples=50, deadline=None)
@given(order_id=RIGHT["order_id"], amount=RIGHT["amount"], kind=RIGHT["kind"])
def test_valid_arguments_always_run_the_body(
    backend: str, order_id: str, amount: float, kind: str
) -> None:
    made, ran = make_refund_tool()
    arguments: JsonObject = {"order_id": order_id, "amount": amount, "kind": kind}
    result = anyio.run(partial(call, made, arguments), backend=backend)
    assert not result.is_error, result.content
    assert ran == [{"order_id": order_id, "amount": float(amount), "kind": kind, "note": None}]


@pytest.mark.anyio
@pytest.mark.parametrize("depth", [900, 20_000])
async def test_arguments_nested_too_deep_go_back_to_the_model(depth: int) -> None:
    # Hundreds of levels (fewer than a JSON parser refuses) raised RecursionError out of
    # call() while the arguments were checked, failing the step instead of telling the model.
    ran: list[object] = []

    @tool
    def keep(data: list[object]) -> str:
        """Keeps the data."""
        ran.append(data)
        return "kept"

    nested: list[JsonValue] = []
    for _ in range(depth):
        nested = [nested]
    result = await keep.call({"data": nested}, call_id="c1")
    assert result.is_error
    assert result.error_type == "invalid_arguments"
    assert result.content == (
        "invalid arguments for tool 'keep': the arguments nest too deep to read; send flatter JSON"
    )
    assert ran == []


class _Unset:
    """A default meaning "not given", as many Python APIs use one."""


_UNSET = _Unset()


@pytest.mark.anyio
async def test_a_default_that_is_not_json_data_is_used_when_the_model_leaves_it_out() -> None:
    # Every call of such a tool raised PydanticSerializationError (a failed step):
    # the record of its arguments could not write the sentinel.
    @tool
    def search(query: str, limit: object = _UNSET) -> str:
        """Search."""
        return f"{query}: {'no limit' if limit is _UNSET else limit}"

    result = await search.call({"query": "anyio"}, call_id="c1")
    assert (result.is_error, result.content) == (False, "anyio: no limit")
    assert search.validated({"query": "anyio"}) == {"query": "anyio", "limit": "<_Unset>"}
    assert (await search.call({"query": "q", "limit": 3}, call_id="c2")).content == "q: 3"


@pytest.mark.anyio
async def test_nan_and_infinity_are_refused_by_field() -> None:
    """A lenient JSON parser reads ``NaN`` and ``Infinity``; no schema "number" is one.
    They reached the body (a refund of ``nan``)."""
    made, ran = make_refund_tool()
    for bad, shown in (
        (float("nan"), "NaN"),
        (float("inf"), "Infinity"),
        (-float("inf"), "-Infinity"),
    ):
        result = await call(made, {"order_id": "o", "amount": bad, "kind": "full"})
        assert ran == []
        assert result.error_type == "invalid_arguments"
        assert result.content == (
            "invalid arguments for tool 'issue_refund': "
            f"amount: Input should be a finite number (got {shown})"
        )

    @tool
    def ship(to: Address, weights: list[float]) -> str:
        return "shipped"

    result = await call(ship, {"to": {"street": "s", "zip": "1"}, "weights": [1.5, float("nan")]})
    assert result.content == (
        "invalid arguments for tool 'ship': "
        'to.zip: no such field, to has only street, zip_code (got "1"); '  # reported together
        "weights[1]: Input should be a finite number (got NaN)"
    )
