"""The SQL schema, its version, and the migrations from older versions, as code.

``journal_meta`` is written first, in the transaction that creates the other
tables, so a journal carries its format and schema version from its first row.
A journal of an older version is migrated step by step, in one transaction; one
of a newer version is refused, never touched.

Versions:
    1. runs, records, meta.
    2. sessions (``journal_runs.session``) and approvals (``pending_approvals``).

A regiment may add a kind of record without a new schema version (``ModelCallStarted``
was one). So that a journal says which kinds it holds before any of them is read, the
first commit of a kind writes a ``record:KIND`` row to ``journal_meta`` (its value: the
regiment that wrote it); a regiment opening the journal checks those rows against the
kinds it knows (see ``RecordMarks``). Journals written before the rows were
written name none of the kinds they hold, all of which every regiment since knows.

An index may be added the same way, with no new version (an older regiment keeps it up
to date as it writes): ``_requests.INDEX`` is added as a journal is opened for writing
(to an existing PostgreSQL journal after the opening transaction, concurrently: ``_pg_index``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from regiment._version import __version__
from regiment.errors import JournalError
from regiment.journal._codec import KNOWN_KINDS
from regiment.journal._requests import add_index

__all__ = ("CURRENT_VERSION", "FORMAT", "RecordMarks", "prepare", "record_marks")

FORMAT = "regiment.journal"
CURRENT_VERSION = 2

_log = logging.getLogger("regiment.journal")
_MARK = "record:"  # journal_meta's name of a kind of record the journal holds
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


def prepare(
    execute: Execute, *, has_meta: bool, blob: str, where: str, index_later: bool = False
) -> None:
    """Create, migrate or refuse the schema; call inside a write transaction.
    (``index_later``: an existing journal's ``_requests.INDEX`` is built by the caller,
    after this transaction: PostgreSQL's, concurrently, see ``_pg_index``.)

    Raises:
        JournalError: the journal is of another format or of a newer schema version.
    """
    if not has_meta:
        execute(_CREATE[0], ())
        for name, value in (("format", FORMAT), ("schema_version", str(CURRENT_VERSION))):
            execute("INSERT INTO journal_meta (name, value) VALUES (?, ?)", (name, value))
        for statement in _CREATE[1:]:
            execute(statement.format(blob=blob), ())
        add_index(execute, blob)
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
    if not index_later:
        add_index(execute, blob)  # (a journal made before the index was: once)


def record_marks(execute: Execute) -> dict[str, str]:
    """The kinds of record the journal says it holds, each with the regiment that first
    wrote it there."""
    rows = execute("SELECT name, value FROM journal_meta WHERE name LIKE ?", (f"{_MARK}%",))
    return {str(name).removeprefix(_MARK): str(value) for name, value in rows}


def mark_records(execute: Execute, kinds: Iterable[str]) -> None:
    """Say in the journal that it holds records of ``kinds``; inside a write transaction."""
    for kind in kinds:
        execute(
            "INSERT INTO journal_meta (name, value) VALUES (?, ?) ON CONFLICT (name) DO NOTHING",
            (f"{_MARK}{kind}", __version__),
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


class RecordMarks:
    """The kinds of record one store's journal says it holds: read as it opens (warning of
    those this regiment does not know: a newer one wrote them, and a resume of their runs
    fails), and marked with the first commit of each kind (``mark``, then ``settle``)."""

    def __init__(self, execute: Execute, where: str) -> None:
        marks = record_marks(execute)
        self.marked, self.pending = set(marks), set[str]()
        newer = {kind: version for kind, version in marks.items() if kind not in KNOWN_KINDS}
        if newer:
            _log.warning(
                "journal %s holds records of %s %s, which this regiment (%s) does not "
                "know: a newer regiment wrote them. Runs that hold them are listed and shown "
                "without them (a note says so), and a resume of one is refused (NewerRecord); "
                "upgrade regiment (to the version named, or later) to resume them.",
                where,
                "kind" if len(newer) == 1 else "kinds",
                ", ".join(
                    f"{kind!r} (written by regiment {v})" for kind, v in sorted(newer.items())
                ),
                __version__,
                extra={"newer_kinds": sorted(newer)},  # (``regiment runs`` prints it)
            )

    def mark(self, execute: Execute, kinds: set[str]) -> None:
        """Inside a commit's transaction: mark the kinds of its records not marked yet."""
        if new := kinds - self.marked - self.pending:
            mark_records(execute, sorted(new))
            self.pending |= new

    def settle(self) -> None:
        """The commit that marked ``pending`` is done: they are marked."""
        self.marked |= self.pending
        self.pending.clear()
