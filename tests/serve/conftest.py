"""uvicorn serves on asyncio only; the app under trio is tested through hypercorn."""

from __future__ import annotations

import pytest


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
