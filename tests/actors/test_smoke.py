from __future__ import annotations

import anyio.lowlevel
import pytest

import regiment

pytestmark = pytest.mark.anyio


async def test_backend_runs() -> None:
    await anyio.lowlevel.checkpoint()
    assert regiment.__version__
