"""The journal suite runs over every backend: memory, SQLite (real files), PostgreSQL (a real server).

The PostgreSQL server is started once per session by ``postgres_server`` (initdb +
pg_ctl in a temporary directory, see ``bench/pg_server.py``) and stopped at the
end; each test gets a schema of its own. Missing server binaries fail the
fixture with an install hint: the suite never skips PostgreSQL silently.
"""

from __future__ import annotations

import sys
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import psycopg
import pytest

from regiment.journal import Journal, open_journal

from .records import Clock

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from pg_server import PostgresServer, alive

BACKENDS = ("memory", "sqlite", "postgres")


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    try:
        server = PostgresServer(fsync=False)
    except FileNotFoundError as exc:
        pytest.fail(str(exc))
    try:
        server.start()
        yield server
    finally:
        server.stop()
        assert server.pid is None or not alive(server.pid), "the postmaster outlived its fixture"


@pytest.fixture
def postgres_url(postgres_server: PostgresServer) -> str:
    """An empty schema of its own on the session's server (first on the search path)."""
    schema = f"journal_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(postgres_server.url, autocommit=True) as admin:
        admin.execute(f'CREATE SCHEMA "{schema}"'.encode())
    return f"{postgres_server.url}?options=-csearch_path%3D{schema}"


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
