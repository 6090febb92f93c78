"""What a kill -9 at one moment would leave of a journal: a copy of what it has
committed then, on SQLite (a backup of the file) or PostgreSQL (its schema's tables
copied, in one snapshot, into a schema of their own), for a test to resume from while
the run it copied is left hanging. ``crash_sites`` gives a live journal and the place
its copy goes, for each backend."""

from __future__ import annotations

import sqlite3
import uuid
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import psycopg
import pytest
from psycopg import sql

__all__ = ("crash_sites", "snapshot")


def crash_sites(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> tuple[str, str]:
    """A journal for ``backend`` (``sqlite`` or ``postgres``) and where its copy goes."""
    if backend == "sqlite":
        return str(tmp_path / "live.db"), str(tmp_path / "crashed.db")
    live = str(request.getfixturevalue("postgres_url"))
    server = urlsplit(live)._replace(query="").geturl()
    return live, f"{server}?options=-csearch_path%3Dcrashed_{uuid.uuid4().hex[:12]}"


def _schema(url: str) -> tuple[str, str]:
    """The server of a journal's PostgreSQL URL, and its schema (its search path)."""
    parts = urlsplit(url)
    (options,) = parse_qs(parts.query)["options"]
    return parts._replace(query="").geturl(), options.removeprefix("-csearch_path=")


def snapshot(live: str, copy: str) -> None:
    """Copy what ``live`` has committed to ``copy`` (blocking: run it in a thread)."""
    if "://" not in live:
        with sqlite3.connect(live) as db, sqlite3.connect(copy) as backup:
            db.backup(backup)
        db.close()
        backup.close()
        return
    server, source_schema = _schema(live)
    _, target_schema = _schema(copy)
    with psycopg.connect(server) as conn:  # one transaction: one snapshot of every table
        conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        tables = [
            row[0]
            for row in conn.execute(
                "SELECT table_name FROM information_schema.tables WHERE table_schema = %s",
                (source_schema,),
            )
        ]
        assert tables, f"no journal tables in schema {source_schema}"
        conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(target_schema)))
        for table in tables:
            source = sql.Identifier(source_schema, table)
            target = sql.Identifier(target_schema, table)
            conn.execute(sql.SQL("CREATE TABLE {} (LIKE {} INCLUDING ALL)").format(target, source))
            conn.execute(sql.SQL("INSERT INTO {} SELECT * FROM {}").format(target, source))
