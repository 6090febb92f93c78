"""What an SQLite journal's connection ran, from SQLite's own statement trace."""

from __future__ import annotations

import re
import sqlite3
from typing import NamedTuple

from regiment.journal import SqliteJournal

_LEVEL = re.compile(r"PRAGMA synchronous=(\w+)$")
_RECORD = re.compile(r"INSERT INTO journal_records \(.*\) VALUES \('[^']*', \d+, '(\w+)'")


def traced(journal: SqliteJournal) -> list[str]:
    """The statements the journal's connection runs from now on (expanded, in order)."""
    statements: list[str] = []
    journal._store._connection().set_trace_callback(statements.append)  # type: ignore[attr-defined]
    return statements


async def on_reads(journal: SqliteJournal) -> sqlite3.Connection:
    """The connection the journal's reads run on (their own, opened here by a read), for
    SQLite's own hooks (``set_trace_callback``, say)."""
    await journal.list_runs(limit=0)
    return journal._reader._connection()  # type: ignore[union-attr,no-any-return]


async def traced_reads(journal: SqliteJournal) -> list[str]:
    """The statements the journal's reads run from now on."""
    statements: list[str] = []
    (await on_reads(journal)).set_trace_callback(statements.append)
    return statements


class Transaction(NamedTuple):
    """One committed write transaction: the synchronous level it ran under (SQLite's: set
    between transactions, never in one) and the kinds of the records it inserted."""

    level: str
    kinds: frozenset[str]


def transactions(statements: list[str], level: str) -> list[Transaction]:
    """The committed write transactions in ``statements`` (``level``: the connection's
    synchronous level when the trace began)."""
    done: list[Transaction] = []
    kinds: set[str] | None = None
    for statement in statements:
        if found := _LEVEL.match(statement):
            level = found.group(1).lower()
        elif statement == "BEGIN IMMEDIATE":
            kinds = set()
        elif statement == "COMMIT" and kinds is not None:
            done.append(Transaction(level, frozenset(kinds)))
            kinds = None
        elif statement == "ROLLBACK":
            kinds = None
        elif kinds is not None and (found := _RECORD.match(statement)):
            kinds.add(found.group(1))
    return done
