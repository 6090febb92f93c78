"""The SQL schema, its version, and the migrations from older versions, as code.

``journal_meta`` is written first, in the transaction that creates the other
tables, so a journal carries its format and schema version from its first row.
A journal of an older version is migrated step by step, in one transaction; one
of a newer version is refused, never touched.

Versions:
    1. runs, records, meta.
    2. sessions (``journal_runs.session``) and approvals (``pending_approvals``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from regiment.errors import JournalError

__all__ = ("CURRENT_VERSION", "FORMAT", "prepare")

FORMAT = "regiment.journal"
CURRENT_VERSION = 2

Execute = Callable[[str, Sequence[object]], list[tuple[Any, ...]]]

_CREATE = (
    "CREATE TABLE journal_meta (name TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "CREATE TABLE journal_runs ("
    " run_id TEXT PRIMARY KEY, team TEXT NOT NULL, goal TEXT NOT NULL, session TEXT,"
    " config_hash TEXT NOT NULL, started_at DOUBLE PRECISION NOT NULL,"
    " updated_at DOUBLE PRECISION NOT NULL, final_status TEXT,"
    " pending_approvals INTEGER NOT NULL DEFAULT 0, owner TEXT, token INTEGER NOT NULL,"
    " lease_expires_at DOUBLE PRECISION NOT NULL, last_seq INTEGER NOT NULL)",
    "CREATE TABLE journal_records ("
    " run_id TEXT NOT NULL REFERENCES journal_runs (run_id), seq INTEGER NOT NULL,"
    " kind TEXT NOT NULL, key TEXT, recorded_at DOUBLE PRECISION NOT NULL,"
    " body {blob} NOT NULL, PRIMARY KEY (run_id, seq))",
    "CREATE INDEX journal_records_key ON journal_records (run_id, key) WHERE key IS NOT NULL",
    "CREATE INDEX journal_runs_started ON journal_runs (started_at)",
    "CREATE INDEX journal_runs_session ON journal_runs (session, started_at)",
)

# MIGRATIONS[n] takes a journal from version n to n + 1.
_MIGRATIONS: dict[int, tuple[str, ...]] = {
    1: (
        "ALTER TABLE journal_runs ADD COLUMN session TEXT",
        "ALTER TABLE journal_runs ADD COLUMN pending_approvals INTEGER NOT NULL DEFAULT 0",
        "CREATE INDEX journal_runs_session ON journal_runs (session, started_at)",
    ),
}


def prepare(execute: Execute, *, has_meta: bool, blob: str, where: str) -> None:
    """Create, migrate or refuse the schema; call inside a write transaction.

    Raises:
        JournalError: the journal is of another format or of a newer schema version.
    """
    if not has_meta:
        execute(_CREATE[0], ())
        for name, value in (("format", FORMAT), ("schema_version", str(CURRENT_VERSION))):
            execute("INSERT INTO journal_meta (name, value) VALUES (?, ?)", (name, value))
        for statement in _CREATE[1:]:
            execute(statement.format(blob=blob), ())
        return
    version = read_version(execute, where)
    if version > CURRENT_VERSION:
        raise JournalError(
            f"journal {where} was written by a newer regiment (schema version {version}; this "
            f"one reads up to {CURRENT_VERSION}); upgrade regiment to use it. It was left untouched."
        )
    for step in range(version, CURRENT_VERSION):
        for statement in _MIGRATIONS[step]:
            execute(statement, ())
    if version < CURRENT_VERSION:
        execute(
            "UPDATE journal_meta SET value = ? WHERE name = 'schema_version'",
            (str(CURRENT_VERSION),),
        )


def read_version(execute: Execute, where: str) -> int:
    """The schema version a journal declares.

    Raises:
        JournalError: it does not declare itself a regiment journal.
    """
    meta: dict[str, str] = dict(execute("SELECT name, value FROM journal_meta", ()))
    if meta.get("format") != FORMAT or not str(meta.get("schema_version", "")).isdigit():
        raise JournalError(
            f"{where} has a journal_meta table but is not a regiment journal "
            f"(format {meta.get('format')!r}); point the journal at another file or database. It "
            "was left untouched."
        )
    return int(meta["schema_version"])
