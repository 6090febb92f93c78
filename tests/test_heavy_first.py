"""tests/conftest.py hands the slowest test files to xdist's workers first: each name in its
``HEAVY_FIRST`` must still be there, or the file it meant would quietly go out late again."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import (
    HEAVY_FIRST,
    RAY_SECOND,
    RAY_UNITS,
    pytest_collection_modifyitems,
    work_unit,
)

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("unit", [unit for unit in HEAVY_FIRST if unit not in RAY_UNITS])
def test_each_heavy_unit_exists(unit: str) -> None:
    assert (ROOT / unit).exists(), f"{unit} is gone: take it out of HEAVY_FIRST (tests/conftest.py)"


@pytest.mark.parametrize("path", sorted(RAY_SECOND))
def test_each_file_of_the_second_ray_unit_exists(path: str) -> None:
    assert (ROOT / path).is_file(), f"{path} is gone: take it out of RAY_SECOND (tests/conftest.py)"


def test_the_ray_files_are_split_between_the_two_ray_units() -> None:
    units = {
        work_unit(f"tests/ray/{file.name}::t") for file in (ROOT / "tests/ray").glob("test_*.py")
    }
    assert units == set(RAY_UNITS)


def test_heavy_units_are_not_named_twice() -> None:
    assert len(set(HEAVY_FIRST)) == len(HEAVY_FIRST)


def test_ray_tests_are_one_of_two_units_and_other_tests_their_file() -> None:
    assert work_unit("tests/ray/test_ray_pool.py::test_x[a]") == RAY_UNITS[1]
    assert work_unit("tests/ray/test_ray_wire.py::test_y") == RAY_UNITS[0]
    assert work_unit("tests/ray/test_ray_new.py::test_z") == RAY_UNITS[0]  # a file unnamed
    assert work_unit("tests/cli/test_cli.py::test_y") == "tests/cli/test_cli.py"


class _Item:
    def __init__(self, nodeid: str) -> None:
        self.nodeid = nodeid


def test_heavy_files_go_first_then_the_largest_and_a_files_tests_keep_their_order() -> None:
    heavy = HEAVY_FIRST[1]
    ids = [
        "tests/actors/test_a.py::one",
        "tests/models/test_b.py::one",
        "tests/models/test_b.py::two",
        f"{heavy}::first",
        "tests/ray/test_ray_x.py::one",
        f"{heavy}::second",
    ]
    items = [_Item(nodeid) for nodeid in ids]
    pytest_collection_modifyitems(items)  # type: ignore[arg-type]  # only nodeid is read
    assert [item.nodeid for item in items] == [
        "tests/ray/test_ray_x.py::one",
        f"{heavy}::first",
        f"{heavy}::second",
        "tests/models/test_b.py::one",
        "tests/models/test_b.py::two",
        "tests/actors/test_a.py::one",
    ]
