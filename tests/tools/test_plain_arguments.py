"""Plain arguments checked as Python values agree with the JSON path, over generated inputs.

A tool whose parameters are all plain JSON types has its arguments checked in
pydantic's strict Python mode when they are plain data (``tools/_plain.py``);
everything else, and every failure, goes through JSON text as before. Each
property compares a plain spec with the same spec told it is not plain: the
same inputs accepted, the same typed values (an ``int`` stays an ``int``, a
``float`` a ``float``), the same error text.
"""

from __future__ import annotations

import dataclasses
import datetime
from collections.abc import Callable
from typing import Annotated

from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import AfterValidator, Field

from regiment.tools._plain import is_plain_annotation, is_plain_data
from regiment.tools._schema import ArgumentSpec, BoundArguments


def scalars(name: str, count: int, ratio: float = 0.5, flag: bool = False) -> None:
    """Scalars, two with defaults."""


def containers(
    tags: list[str], weights: dict[str, float], note: str | None = None, depth: int | None = 3
) -> None:
    """Lists, dicts and optional values."""


def bounded(
    x: Annotated[int, Field(ge=0, le=100, description="a bounded number")],
    /,
    rows: list[dict[str, int | None]],
    share: Annotated[float, Field(gt=0)] = 1.5,
) -> None:
    """A positional-only bounded parameter and nested containers."""


_FUNCTIONS: tuple[Callable[..., None], ...] = (scalars, containers, bounded)
_SPECS = [ArgumentSpec.of(fn, fn.__name__, {}) for fn in _FUNCTIONS]
_NAMES = sorted({n for spec in _SPECS for n in spec.names} | {"extra"})

_SCALAR = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.integers(min_value=-5, max_value=120),
    st.floats(allow_nan=True, allow_infinity=True),
    st.floats(min_value=-10, max_value=10).map(float),
    st.integers(min_value=-3, max_value=3).map(float),  # whole-number floats
    st.text(max_size=6),
)
_VALUE = st.recursive(
    _SCALAR,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.lists(inner, max_size=3).map(tuple),
        st.dictionaries(st.text(max_size=4), inner, max_size=3),
        st.dictionaries(st.integers(0, 3), inner, max_size=2),
    ),
    max_leaves=8,
)
_ARGUMENTS = st.dictionaries(st.sampled_from(_NAMES), _VALUE, max_size=5)


def _typed(value: object) -> object:
    """``value`` with every leaf's type beside it, so ``5`` and ``5.0`` differ."""
    if isinstance(value, dict):
        return {k: _typed(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return (type(value).__name__, [_typed(v) for v in value])
    if isinstance(value, float) and value != value:
        return ("float", "nan")
    return (type(value).__name__, value)


def _same(fast: BoundArguments | str, slow: BoundArguments | str) -> None:
    if isinstance(slow, str):
        assert fast == slow
        return
    assert isinstance(fast, BoundArguments)
    assert _typed(fast.args) == _typed(slow.args)
    assert _typed(fast.kwargs) == _typed(slow.kwargs)
    assert _typed(fast.as_json) == _typed(slow.as_json)
    assert _typed(fast.sent) == _typed(slow.sent)


def test_the_specs_are_plain_and_a_validator_or_a_date_is_not() -> None:
    assert all(spec.plain for spec in _SPECS)
    assert not is_plain_annotation(datetime.date)
    assert not is_plain_annotation(Annotated[int, AfterValidator(abs)])
    assert not is_plain_annotation(list[datetime.date] | None)
    assert not is_plain_annotation(int | str)
    assert not is_plain_annotation(dict[int, str])

    def dated(day: datetime.date, n: int) -> None:
        """Not plain: one parameter is a date."""

    assert not ArgumentSpec.of(dated, "dated", {}).plain


def test_plain_data_is_what_json_gives_back_unchanged() -> None:
    assert is_plain_data({"a": [1, 2.5, None, True, "x", {"b": -3}]})
    assert not is_plain_data({"a": 5.0})  # the JSON path reads it as 5
    assert not is_plain_data({"a": (1, 2)})
    assert not is_plain_data({1: "a"})
    assert not is_plain_data({"a": float("nan")})
    assert not is_plain_data({"a": 2**64})


def test_valid_plain_arguments_take_the_fast_path() -> None:
    spec = _SPECS[2]
    bound = spec._plain({"x": 7, "rows": [{"a": 1, "b": None}], "share": 0.25})
    assert bound is not None
    assert bound.args == (7,)
    assert bound.kwargs == {"rows": [{"a": 1, "b": None}], "share": 0.25}
    assert bound.as_json == {"x": 7, "rows": [{"a": 1, "b": None}], "share": 0.25}
    assert spec._plain({"x": 700, "rows": []}) is None  # out of bounds: the JSON path says why


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(range(len(_SPECS))), _ARGUMENTS)
def test_the_fast_path_and_the_json_path_agree(which: int, arguments: dict[str, object]) -> None:
    spec = _SPECS[which]
    json_only = dataclasses.replace(spec, plain=False)
    _same(spec.validate(arguments), json_only.validate(arguments))


@settings(max_examples=300, deadline=None)
@given(
    st.fixed_dictionaries(
        {"name": st.text(max_size=5), "count": _SCALAR},
        optional={"ratio": _SCALAR, "flag": _SCALAR},
    )
)
def test_near_valid_scalars_agree(arguments: dict[str, object]) -> None:
    spec = _SPECS[0]
    json_only = dataclasses.replace(spec, plain=False)
    _same(spec.validate(arguments), json_only.validate(arguments))


@settings(max_examples=300, deadline=None)
@given(
    st.fixed_dictionaries(
        {
            "tags": st.lists(st.one_of(st.text(max_size=3), _SCALAR), max_size=3),
            "weights": st.dictionaries(st.text(max_size=3), _SCALAR, max_size=3),
        },
        optional={"note": _SCALAR, "depth": _SCALAR},
    )
)
def test_near_valid_containers_agree(arguments: dict[str, object]) -> None:
    spec = _SPECS[1]
    json_only = dataclasses.replace(spec, plain=False)
    _same(spec.validate(arguments), json_only.validate(arguments))
