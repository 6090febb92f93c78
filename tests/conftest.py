"""Every async test runs on both anyio backends."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from typing import Any

import pytest


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


def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """``make test`` runs the suite on pytest-xdist workers. Each test file goes to one
    worker, so a module's costly fixtures (a built venv, a PostgreSQL server) are made
    once; every Ray test goes to one worker, so the session starts one local Ray, not one
    per worker. (xdist's own ``xdist_group`` marks do not group under pytest 9: its
    ``--dist loadgroup`` renames nodes through an attribute pytest no longer reads.)"""
    from xdist.scheduler import LoadScopeScheduling

    class ByFile(LoadScopeScheduling):  # type: ignore[misc]  # (xdist ships no types)
        def _split_scope(self, nodeid: str) -> str:
            path = nodeid.split("::", 1)[0]
            return "tests/ray" if path.startswith("tests/ray/") else path

    return ByFile(config, log)
