"""A team file with thousands of workers is read in time linear in their number: the
check that no two share a name compared each name with all the earlier ones (20,000
workers took 13 s in ``regiment validate``). Counted in calls, not time."""

from __future__ import annotations

import sys
from types import FrameType

import pytest

from regiment.config import parse_config
from regiment.config._schema import unique_names
from regiment.errors import ConfigError


class _Name(str):
    """A worker name that counts how often it is compared with another."""

    compared = 0

    def __eq__(self, other: object) -> bool:
        _Name.compared += 1
        return str.__eq__(self, other)

    __hash__ = str.__hash__


def _comparisons(count: int) -> int:
    _Name.compared = 0
    unique_names([_Name(f"w{i}") for i in range(count)], "team.toml")
    return _Name.compared


def test_telling_names_apart_compares_each_name_a_bounded_number_of_times() -> None:
    assert _comparisons(4000) <= 4 * max(_comparisons(1000), 1000)  # not 16 times


def test_a_name_used_twice_still_names_both_workers() -> None:
    with pytest.raises(ConfigError) as caught:
        unique_names(["a", "b", "c", "b"], "team.toml")
    assert str(caught.value).startswith("team.toml: workers[3].name: 'b' is also workers[1]'s")


def _team(count: int) -> str:
    workers = "".join(f'[[workers]]\nname = "w{i}"\ndescription = "d{i}"\n\n' for i in range(count))
    return f'name = "big"\nmodel = "scripted"\n\n{workers}'


def _calls(count: int) -> int:
    text, calls = _team(count), [0]

    def counted(frame: FrameType, event: str, arg: object) -> None:
        if event in ("call", "c_call"):
            calls[0] += 1

    sys.setprofile(counted)
    try:
        config = parse_config(text, format="toml", source="team.toml")
    finally:
        sys.setprofile(None)
    assert len(config.workers) == count
    return calls[0]


def test_reading_4000_workers_takes_about_4_times_the_calls_of_1000() -> None:
    small, large = _calls(1000), _calls(4000)
    assert large <= 4.5 * small, (small, large)
