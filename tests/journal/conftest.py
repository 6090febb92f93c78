"""The journal suite runs over every backend: memory, SQLite (real files), PostgreSQL (a real server).

The PostgreSQL server is started once per session by ``postgres_server`` (tests/conftest.py:
initdb + pg_ctl in a temporary directory, see ``bench/pg_server.py``) and stopped at the
end; each test gets a schema of its own (``postgres_url``). Missing server binaries fail
the fixture with an install hint: the suite never skips PostgreSQL silently.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from regiment.journal import Journal, open_journal

from .records import Clock

BACKENDS = ("memory", "sqlite", "postgres")


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def location(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> str | None:
    """What ``open_journal`` is given for ``backend``."""
    if backend == "memory":
        return None
    if backend == "sqlite":
        return str(tmp_path / "journal.db")
    return str(request.getfixturevalue("postgres_url"))


@pytest.fixture
async def journal(location: str | None, clock: Clock) -> AsyncIterator[Journal]:
    opened = await open_journal(location, clock=clock)
    try:
        yield opened
    finally:
        await opened.close()
