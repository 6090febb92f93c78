"""A PostgreSQL journal's session: what it lets wait how long, and who holds a lock it waited for.

Another session's transaction can hold a lock the journal needs: a ``LOCK TABLE`` or a
migration (``ALTER TABLE``) in another program, or a long transaction that read or wrote
the journal's tables. PostgreSQL would have every statement of ours wait for it without
end (no error, no log line: ``regiment runs`` and a run's first write hang). The journal's
session sets ``lock_timeout`` (unless the URL's options, the role or the server set one),
so a wait ends with ``LockNotAvailable``; :func:`lock_error` turns that into a
``JournalError`` naming the sessions holding a lock on the journal (pid, user, program,
client, how long in their transaction, their last statement) and what to do.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from regiment.errors import JournalError
from regiment.journal._sql import SqlStore

__all__ = ("LOCK_TIMEOUT", "SCHEMA_LOCK", "LockReporting", "configure", "last_line", "one_line")

SCHEMA_LOCK = 0x7265_6769  # "regi": serialises schema creation and migration across processes
LOCK_TIMEOUT = 30.0  # seconds, the default: as long as an SQLite journal's busy_timeout
_SHOWN = 3  # holders named in a message
# A session idle inside a transaction this long is ended by the server, its locks freed: a
# process frozen mid-transaction (SIGSTOP, a paused VM) would otherwise hold its run's row
# lock, and every other process's take-over, resume or decision waits for it without end.
# Our transactions send their statements back to back, so none is idle near this long.
_IDLE_IN_TRANSACTION = "10s"

# Sessions (not ours) of this database whose open transaction holds a granted lock on one
# of the journal's tables (those the search path finds) or the journal's advisory lock
# (schema creation and migration), the oldest transaction first.
_HOLDERS = """
SELECT a.pid, a.usename, a.application_name, host(a.client_addr), a.state,
       extract(epoch FROM now() - a.xact_start), left(a.query, 160)
FROM pg_stat_activity a
WHERE a.pid <> pg_backend_pid() AND a.datname = current_database()
  AND a.xact_start IS NOT NULL
  AND EXISTS (
    SELECT 1 FROM pg_locks l
    WHERE l.pid = a.pid AND l.granted AND (
      l.relation IN (to_regclass('journal_meta'), to_regclass('journal_runs'),
                     to_regclass('journal_records'))
      OR (l.locktype = 'advisory' AND l.objid = %s)))
ORDER BY a.xact_start
LIMIT %s
"""


class LockReporting(SqlStore):
    """A store whose wait for another session's lock that ran out says who holds a lock
    on the journal and what to do (its transaction was rolled back)."""

    _conn: Any  # the open connection (psycopg's), if any
    _psycopg: Any  # the driver's module
    # A read's one snapshot: each statement of a READ COMMITTED transaction reads its own.
    _SNAPSHOT = "BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY"

    @contextmanager
    def _guard(self, action: str) -> Iterator[None]:
        try:
            with super()._guard(action):
                yield
        except JournalError as exc:
            if not isinstance(exc.__cause__, self._psycopg.errors.LockNotAvailable):
                raise
            raise lock_error(self._conn, self.where, action) from exc.__cause__


def configure(connection: Any, lock_timeout: float) -> None:
    """Bound the session's idle time inside a transaction (``_IDLE_IN_TRANSACTION``) and its
    waits for a lock (``lock_timeout`` seconds), each unless set already (by the URL's
    ``options``, the role or the server)."""
    (idle,) = connection.execute("SHOW idle_in_transaction_session_timeout").fetchone() or ("",)
    if idle == "0":
        connection.execute(f"SET idle_in_transaction_session_timeout = '{_IDLE_IN_TRANSACTION}'")
    (current,) = connection.execute("SHOW lock_timeout").fetchone() or ("",)
    if current == "0":
        connection.execute(f"SET lock_timeout = '{max(1, round(lock_timeout * 1000))}ms'")


def holders(connection: Any) -> list[str]:
    """The sessions holding a lock on the journal, described for a message (none if that
    cannot be read: the connection is gone, or the role may not see ``pg_stat_activity``)."""
    try:
        rows = connection.execute(_HOLDERS, (SCHEMA_LOCK, _SHOWN)).fetchall()
    except Exception:  # (only to describe an error already being raised)
        return []
    return [_describe(*row) for row in rows]


def _describe(
    pid: int,
    user: str | None,
    app: str | None,
    client: str | None,
    state: str | None,
    age: Any,
    query: str | None,
) -> str:
    parts = [f"pid {pid}"]
    if user:
        parts.append(f"user {user}")
    if app:
        parts.append(f"program {app!r}")
    parts.append(f"from {client}" if client else "on the server's socket")
    if age is not None:
        parts.append(f"in a transaction for {float(age):.0f} s ({state or 'state unknown'})")
    if query:
        parts.append(f"last statement: {' '.join(query.split())}")
    return ", ".join(parts)


def lock_error(connection: Any, where: str, action: str) -> JournalError:
    """The error of a wait for a lock that ran out (``LockNotAvailable``): who holds one on
    the journal, and what to do."""
    try:
        (timeout,) = connection.execute("SHOW lock_timeout").fetchone()
    except Exception:  # (only to describe an error already being raised)
        timeout = "its lock_timeout"
    found = holders(connection)
    if found:
        who = "; ".join(found)
        pids = ", ".join(entry.split(",", 1)[0].removeprefix("pid ") for entry in found)
        end = (
            "end that transaction (commit or roll it back where it runs, or "
            f"SELECT pg_terminate_backend(PID) for {pids})"
        )
    else:
        who = "a session that no longer shows (it may have ended since)"
        end = "end the transaction that holds the lock"
    return JournalError(
        f"journal {where}: {action} waited {timeout} for a lock on the journal that another "
        f"session holds, and gave up: held by {who}; {end}, then try again (to wait longer: "
        "PostgresJournal.open(url, lock_timeout=SECONDS), or lock_timeout in the URL's "
        "options, ?options=-clock_timeout%3D120s)"
    )


def one_line(exc: Exception) -> str:
    """The driver's message on one line (libpq's may hold several)."""
    return " ".join(line.strip() for line in str(exc).splitlines() if line.strip())


def last_line(exc: Exception) -> str:
    """The driver's message, its last line (libpq's hint about the server) only."""
    lines = [line.strip() for line in str(exc).strip().splitlines() if line.strip()]
    return lines[-1] if lines else type(exc).__name__
