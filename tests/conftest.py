"""Every async test runs on both anyio backends."""

from __future__ import annotations

import gc
from collections.abc import Iterator

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
