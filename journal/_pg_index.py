"""The request-key index of an existing PostgreSQL journal, built without blocking its writers.

``_requests.INDEX`` is added as a journal is opened for writing (see ``_schema``). A plain
``CREATE INDEX`` holds a lock on ``journal_records`` that stops every writer of every
process until the index is built (on a large journal, a long while; and it queues behind
any open transaction that wrote the table, with every writer behind it). An existing
PostgreSQL journal gets the index with ``CREATE INDEX CONCURRENTLY``, outside a
transaction, after the opening one committed: writers go on meanwhile (the build waits
for their transactions instead). A new journal's empty table is indexed as it is created.

A concurrent build that failed or was interrupted (its process killed, its wait for a
long transaction out of ``lock_timeout``) leaves the index INVALID: kept up to date by
every write and used by no query. The next opening for writing drops it (concurrently)
and builds it again, with a warning saying so. One process builds at a time (a session
advisory lock): another that opens meanwhile leaves the index to it rather than take
its unfinished index for a leftover. A build that fails is a warning, not a failed open:
the journal works without the index (a look-up of a request by id alone reads more).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from regiment.errors import JournalError
from regiment.journal._pg_session import SCHEMA_LOCK
from regiment.journal._requests import CREATE_CONCURRENTLY, INDEX

if TYPE_CHECKING:
    from regiment.journal._pg_session import LockReporting

__all__ = ("build_index",)

_log = logging.getLogger("regiment.journal")
_VALID = "SELECT i.indisvalid FROM pg_index i WHERE i.indexrelid = to_regclass(?)"
# The builders' lock: the journal's advisory key, and its records table (its schema's).
_KEY = "?, (to_regclass('journal_records')::oid::bigint & 2147483647)::int"


def build_index(store: LockReporting) -> None:
    """Build ``INDEX`` concurrently if the journal lacks it or holds an INVALID one; on
    ``store``'s connection, outside a transaction (after the opening one)."""
    where = store.where
    try:
        with store._guard(f"building index {INDEX}"):
            if _valid(store):  # (as every opening but the first finds it)
                return
            (locked,) = store._execute(f"SELECT pg_try_advisory_lock({_KEY})", (SCHEMA_LOCK,))[0]
            if not locked:
                _log.info("journal %s: another process builds index %s", where, INDEX)
                return
            try:
                _build(store)
            finally:
                store._execute(f"SELECT pg_advisory_unlock({_KEY})", (SCHEMA_LOCK,))
    except JournalError as exc:
        _log.warning(
            "%s; the journal works without it (looking an approval request up by its id "
            "alone reads more of it), and it is built again the next time the journal is "
            "opened for writing",
            exc,
        )


def _valid(store: LockReporting) -> bool | None:
    """Whether the index is valid (``None``: the journal has none)."""
    found = store._execute(_VALID, (INDEX,))
    return bool(found[0][0]) if found else None


def _build(store: LockReporting) -> None:
    valid = _valid(store)  # (again: another process may have built it meanwhile)
    if valid:
        return
    if valid is not None:
        _log.warning(
            "journal %s: index %s was left INVALID by a concurrent build that did not "
            "finish (a process killed while it built it, or its wait for a long "
            "transaction that ran out); dropping it and building it again, while writers "
            "go on",
            store.where,
            INDEX,
        )
        store._execute(f"DROP INDEX CONCURRENTLY IF EXISTS {INDEX}")
    store._execute(CREATE_CONCURRENTLY)
    _log.info("journal %s: index %s built", store.where, INDEX)
