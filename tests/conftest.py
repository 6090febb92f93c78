"""Every async test runs on both anyio backends."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from pathlib import Path

import pytest

_TESTS = Path(__file__).resolve().parent


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(autouse=True)
def _half_read_bodies_collected(request: pytest.FixtureRequest) -> Iterator[None]:
    """A test that breaks a provider's stream on purpose (``half_read_body``) leaves the
    SDK's half-read body generators in reference cycles. Collected later, in another
    test, trio warns there about them; so they are collected here, under this test's
    own warning filters."""
    yield
    marks = request.node.iter_markers("filterwarnings")
    if any("Async generator 'anthropic." in str(arg) for mark in marks for arg in mark.args):
        gc.collect()


def pytest_itemcollected(item: pytest.Item) -> None:
    """``make test`` runs the suite on pytest-xdist workers with ``--dist loadgroup``. Each
    file's tests go to one worker, so a module's costly fixtures (a built venv, a
    PostgreSQL server) are made once; every Ray test goes to one worker, so the session
    starts one local Ray, not one per worker. (Marked as each test is collected: xdist
    reads the marks in its own ``pytest_collection_modifyitems``, which runs first.)"""
    where = item.path.resolve().relative_to(_TESTS).as_posix()
    item.add_marker(pytest.mark.xdist_group("ray" if where.startswith("ray/") else where))
