"""uvicorn serves on asyncio only; the app under trio is tested through hypercorn."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(params=["sqlite", "postgres"])
def journal(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """The service's journal: a real SQLite file, then a schema of its own on the session's
    real PostgreSQL server (the test runs once on each)."""
    if request.param == "sqlite":
        return str(tmp_path / "runs.db")
    return str(request.getfixturevalue("postgres_url"))
