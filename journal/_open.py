"""``open_journal``: what ``Team.start(journal=...)`` and ``--journal`` accept, as a Journal."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TypeAlias

from regiment.errors import ConfigError
from regiment.journal._memory import MemoryJournal
from regiment.journal._protocol import Journal

__all__ = ("JournalSpec", "open_journal")

JournalSpec: TypeAlias = Journal | str | Path | None


async def open_journal(
    spec: JournalSpec, *, clock: Callable[[], float] | None = None, read_only: bool = False
) -> Journal:
    """A journal for ``spec``.

    Args:
        spec: ``None`` for one in memory; ``"postgresql://..."`` (or ``postgres://``)
            for PostgreSQL; any other string or a path for an SQLite file, created
            if missing; a ``Journal`` object is returned as it is.
        clock: seconds since the epoch, for leases (default ``time.time``); ignored
            for a ``Journal`` object.
        read_only: for reading only (``list_runs``, ``get_run``, ``read``, approvals): an
            SQLite file is opened read-only, so it can be read where this process may not
            write (a read-only mount), and is never created, migrated or written; a write
            raises ``JournalError``. Other journals are opened as always.

    Whoever opens a journal closes it: a ``Journal`` object passed through stays
    its owner's to close.

    Raises:
        JournalError: the file or database cannot be used (the message names it and
            says what to do), or psycopg is missing for a PostgreSQL URL.
        ConfigError: ``spec`` is none of the above.
    """
    if spec is None:
        return MemoryJournal(clock=clock)
    # The SQL backends (sqlite3, the schema code) load only when a file or URL is given.
    if isinstance(spec, str) and _is_postgres_url(spec):
        from regiment.journal._postgres import PostgresJournal

        return await PostgresJournal.open(spec, clock=clock)
    if isinstance(spec, str | Path):
        if not str(spec):
            raise ConfigError("the journal path is empty; give a file name or a postgresql:// URL")
        if "://" in str(spec):  # `sqlite:///x.db`, `mysql://...` made an SQLite file 'sqlite:/x.db'
            scheme = str(spec).partition("://")[0]  # not the URL: it may hold a password
            raise ConfigError(
                f"the journal is a {scheme}:// URL, which no journal takes; give a file name "
                "(an SQLite file, runs.db) or a postgresql:// URL"
            )
        from regiment.journal._sqlite import SqliteJournal

        return await SqliteJournal.open(spec, clock=clock, read_only=read_only)
    if isinstance(spec, Journal):
        return spec
    raise ConfigError(
        f"journal={spec!r} is not a journal: pass None (in memory), a file path (SQLite), "
        "a postgresql:// URL, or a Journal object"
    )


def _is_postgres_url(spec: str) -> bool:
    return spec.startswith(("postgresql://", "postgres://"))
