"""tests/conftest.py hands the slowest test files to xdist's workers first: each name in its
``HEAVY_FIRST`` must still be there, or the file it meant would quietly go out late again."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import HEAVY_FIRST, pytest_collection_modifyitems, work_unit

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("unit", HEAVY_FIRST)
def test_each_heavy_unit_exists(unit: str) -> None:
    assert (ROOT / unit).exists(), f"{unit} is gone: take it out of HEAVY_FIRST (tests/conftest.py)"


def test_heavy_units_are_not_named_twice() -> None:
    assert len(set(HEAVY_FIRST)) == len(HEAVY_FIRST)


def test_ray_tests_are_one_unit_and_other_tests_their_file() -> None:
    assert work_unit("tests/ray/test_ray_pool.py::test_x[a]") == "tests/ray"
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
