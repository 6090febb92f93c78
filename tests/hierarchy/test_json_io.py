"""``to_json`` and its readers: what they are given that ``to_json`` never wrote is a
``ConfigError`` that says so (also a ``ValueError``), never a ``RecursionError``."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from regiment.errors import ConfigError
from regiment.hierarchy import RunStarted, event_from_json, result_from_json, to_json

DEEP = b'{"type": "RunStarted", "extra": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"


def test_an_event_goes_there_and_back() -> None:
    event = RunStarted(run_id="r-1", goal="g", team="t")
    assert event_from_json(to_json(event)) == event


@pytest.mark.parametrize("read", [event_from_json, result_from_json])
@pytest.mark.parametrize(
    ("data", "message"),
    [
        # was a RecursionError ('maximum recursion depth exceeded while deserializing')
        (DEEP, "the JSON nests too deep to read"),
        (DEEP.decode(), "the JSON nests too deep to read"),
        (b"{", "as to_json writes it (Input data was truncated)"),
        (b"[1]", "as to_json writes it (Expected `object`, got `array`)"),
    ],
)
def test_what_to_json_never_wrote_is_a_config_error(
    read: Callable[[bytes | str], object], data: bytes | str, message: str
) -> None:
    with pytest.raises(ConfigError) as info:
        read(data)
    assert isinstance(info.value, ValueError)  # as msgspec's DecodeError was
    assert str(info.value).startswith(f"{read.__name__}: ")
    assert message in str(info.value)
    assert str(info.value).endswith("pass it the JSON that to_json gave")
