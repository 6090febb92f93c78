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

A concurrent build waits for every transaction of the database's other sessions that
began before it (and for those that wrote the table) to end. The opener that builds used
to wait with it: an old journal opened while another program held a transaction open
(an idle session left in a transaction, a long report) was not open until that ended,
or until ``lock_timeout`` (30 s by default) ran out and the build failed, leaving an
INVALID index. As the journal works without the index, the opener no longer waits for
such a transaction: if one has been open for more than ``_OLD`` seconds, the build is
left to a later opening for writing, saying so (INFO), and nothing is left behind. A
transaction that starts as the build does is a short one (a writer's commit): the build
waits for it as before.
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
_OLD = 2.0  # seconds: a transaction open longer than this is not waited for (see above)
# The longest-open transaction of another session of this database, if one is that old.
_WAITED_FOR = (
    "SELECT pid, round(extract(epoch FROM clock_timestamp() - xact_start)::numeric, 1)::text,"
    " coalesce(nullif(application_name, ''), 'no application_name'), state FROM pg_stat_activity"
    " WHERE datname = current_database() AND pid <> pg_backend_pid()"
    " AND backend_type = 'client backend' AND xact_start IS NOT NULL"
    " AND xact_start < clock_timestamp() - make_interval(secs => ?)"
    " ORDER BY xact_start LIMIT 1"
)


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
                if not _held_up(store):
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


def _held_up(store: LockReporting) -> bool:
    """Whether another session's transaction, open for long, would hold the build up;
    if so, say that the build is left to a later opening."""
    found = store._execute(_WAITED_FOR, (_OLD,))
    if not found:
        return False
    pid, seconds, program, state = found[0]
    _log.info(
        "journal %s: index %s is not built now: building it would wait for the transaction "
        "of session pid %s (%s, %s), open for %s s; the journal works without it (looking "
        "an approval request up by its id alone reads more of it), and it is built the "
        "next time the journal is opened for writing with no such transaction open",
        store.where,
        INDEX,
        pid,
        program,
        state,
        seconds,
    )
    return True


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
