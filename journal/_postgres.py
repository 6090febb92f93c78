"""The PostgreSQL journal: several processes share runs through one database.

psycopg 3's synchronous driver runs in a worker thread (asyncio and trio alike), one
connection for the writes, one call at a time, and one for the reads (opened at the
first) in a thread of its own, so a read never queues behind a write waiting for a lock.
Every lease check and write runs in one transaction that locks the run's row (``SELECT
... FOR UPDATE``); creating or migrating the schema holds an advisory lock. A lock
another session holds is waited for up to ``lock_timeout`` (see ``_pg_session``).

A server that goes away (a restart, a fail-over, an idle timeout, our backend
terminated) is waited for: a connection it closed is replaced, connecting again with
backoff for up to ``reconnect_timeout`` seconds, before a transaction begins on it
(and before a read outside one is sent again), and a transaction it broke before its
COMMIT was sent is run again on the new connection: the server had rolled it back, so
nothing is written twice. One that breaks at its COMMIT (whose outcome is unknown), or
a server still away after the timeout, fails that commit. Reads do not wait (but a
run's own, see ``patient_reads``): a read tries to connect once, and fails at once
(``JournalError``, "unavailable") while the server cannot be reached, or while a write
waits for it (``refusing_reads``), so a listing or a service's ``GET`` answers at once
instead of queueing behind the writes.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, ExitStack, contextmanager, suppress
from functools import partial
from typing import TYPE_CHECKING, Any, Self, TypeVar, final

import anyio

from regiment._shown import shown_spec
from regiment.errors import JournalError
from regiment.journal._buffered import BufferedJournal
from regiment.journal._patience import reads_wait
from regiment.journal._pg_index import build_index
from regiment.journal._pg_session import (
    LOCK_TIMEOUT,
    SCHEMA_LOCK,
    LockReporting,
    configure,
    last_line,
    one_line,
)
from regiment.journal._schema import prepare
from regiment.journal._store import Batch, Refused
from regiment.journal._views import Lease

if TYPE_CHECKING:
    import psycopg

__all__ = ("INSTALL_HINT", "PostgresJournal")

INSTALL_HINT = "PostgreSQL journals need psycopg: pip install 'regiment[postgres]'"
_log = logging.getLogger("regiment.journal")
_T = TypeVar("_T")
_FIRST_WAIT, _LONGEST_WAIT = 0.1, 2.0  # seconds between attempts to reach a lost server
_TABLES = ("journal_runs", "journal_records")  # a journal's tables besides journal_meta
_ATTEMPTS = 3  # transactions a lost connection broke before their COMMIT, run again


def _import_psycopg() -> Any:
    try:
        import psycopg
    except ImportError as exc:
        raise JournalError(INSTALL_HINT) from exc
    return psycopg


def _display(url: str) -> str:
    """The URL without its password, for messages: as given otherwise (its schema in
    ``options``, a socket's ``host``), so a command it is pasted into reads this journal."""
    try:
        return shown_spec(url)
    except ValueError:  # (a port that is not a number, say): psycopg refuses it too
        return "postgresql://(unparseable URL)"


class _PostgresStore(LockReporting):
    _for_update = " FOR UPDATE"

    def __init__(
        self,
        url: str,
        *,
        connect_timeout: float,
        reconnect_timeout: float,
        lock_timeout: float = LOCK_TIMEOUT,
        reads: bool = False,
    ) -> None:
        self._psycopg = _import_psycopg()
        self._url = url
        self._connect_timeout = connect_timeout
        self._lock_timeout = lock_timeout
        self._reconnect_timeout = reconnect_timeout
        self._begun = False  # the last transaction began on a live connection
        self._committing = False  # its body ran: its COMMIT is being sent
        self._given_up = False  # the server stayed away for a whole reconnect_timeout
        self._writing = False  # in a write transaction: a lost server is waited for
        self.refusing_reads: str | None = None  # while a write waits for the server: why
        self.where = _display(url)
        self._statements: dict[str, str] = {}
        self._conn: psycopg.Connection[Any] | None = None
        self._closed = False
        if reads:  # the journal's reads' (see reader): connected at its first read, as a
            return  # connection that went away is; the schema is prepared already
        try:
            self._conn = self._connect()
        except self._psycopg.Error as exc:
            raise JournalError(
                f"journal {self.where}: connecting failed: {one_line(exc)}; check that the "
                "server runs and takes connections at that address and that the URL's user, "
                "password and database are right, then try again"
            ) from exc
        try:
            with self._guard("opening"), self._write_transaction():
                self._execute("SELECT pg_advisory_xact_lock(?)", (SCHEMA_LOCK,))
                (found,) = self._execute("SELECT to_regclass('journal_meta')")[0]
                if found is None:
                    _refuse_foreign_tables(self)
                prepare(
                    self._execute,
                    has_meta=found is not None,
                    blob="BYTEA",
                    where=self.where,
                    index_later=True,
                )
            self.read_marks()
            build_index(self)  # (an existing journal's, concurrently: writers go on)
        except BaseException:
            self._conn.close()
            raise

    def reader(self) -> _PostgresStore:
        """A connection of its own for the journal's reads: a read is not queued behind a
        write that waits for a row lock (another process's transaction) or for the server."""
        if self._closed:
            raise JournalError(f"journal {self.where} is closed")
        return _PostgresStore(
            self._url,
            connect_timeout=self._connect_timeout,
            reconnect_timeout=self._reconnect_timeout,
            lock_timeout=self._lock_timeout,
            reads=True,
        )

    def _connect(self) -> psycopg.Connection[Any]:
        timeout = max(1, round(self._connect_timeout))
        connection: psycopg.Connection[Any] = self._psycopg.connect(
            self._url, autocommit=True, connect_timeout=timeout
        )
        configure(connection, self._lock_timeout)  # no endless waits for another's locks
        return connection

    def _connection(self) -> psycopg.Connection[Any]:
        if self._closed:
            raise JournalError(f"journal {self.where} is closed")
        if self._conn is None or self._conn.closed:  # not yet, or the server went away
            self._conn = self._reconnect()
        return self._conn

    def _reconnect(self) -> psycopg.Connection[Any]:
        """A new connection. For a write: trying again with backoff while the server cannot
        be reached (restarting, failing over), for up to ``reconnect_timeout`` seconds (once
        it has waited that long in vain, one attempt each, until the server is back). For a
        read: one attempt, and a ``JournalError`` saying the journal is unavailable."""
        if not self._writing and not reads_wait():
            try:
                connection = self._connect()
            except self._psycopg.OperationalError as exc:
                raise JournalError(self.unavailable(last_line(exc))) from exc
            if self._given_up:
                _log.warning("journal %s: the server is reachable again", self.where)
            self._given_up = False
            return connection
        try:
            return self._reconnect_patiently()
        finally:
            self.refusing_reads = None

    def unavailable(self, why: str) -> str:
        """What a read says while the server cannot be reached."""
        return (
            f"journal {self.where} is unavailable: the server cannot be reached ({why}); a "
            f"read fails at once while it is away (runs' writes wait up to "
            f"{self._reconnect_timeout:g} s for it)"
        )

    def _reconnect_patiently(self) -> psycopg.Connection[Any]:
        deadline = time.monotonic() + (0.0 if self._given_up else self._reconnect_timeout)
        wait, tries = _FIRST_WAIT, 0
        while True:
            try:
                connection = self._connect()
            except self._psycopg.OperationalError as exc:
                tries += 1
                left = deadline - time.monotonic()
                if left <= 0:
                    self._give_up(tries, exc)
                    raise
                self.refusing_reads = self.unavailable(last_line(exc))  # reads fail at once
                level = logging.WARNING if tries == 1 else logging.DEBUG
                _log.log(
                    level,
                    "journal %s: the server cannot be reached (%s); trying again for up to %.0f s",
                    self.where,
                    last_line(exc),
                    left,
                )
                time.sleep(min(wait, left))  # (the journal's worker thread, not the event loop)
                wait = min(wait * 2, _LONGEST_WAIT)
            else:
                if tries or self._given_up:
                    _log.warning("journal %s: the server is reachable again", self.where)
                self._given_up = False
                return connection

    def _give_up(self, tries: int, exc: Exception) -> None:
        if not self._given_up and tries > 1:
            _log.warning(
                "journal %s: the server could not be reached for %.0f s (%s); this write "
                "fails, and so do the next ones until it is back",
                self.where,
                self._reconnect_timeout,
                last_line(exc),
            )
        self._given_up = True

    def _cursor(self) -> Any:
        return self._connection().cursor()

    def probe(self) -> None:
        """A round trip, before a read commits what is buffered: a server that went away
        unseen fails it at once (``unavailable``) rather than the commit waiting for it."""
        with self._guard("reaching the server"):
            self._execute("SELECT 1")

    @contextmanager
    def _write_transaction(self) -> Iterator[None]:
        self._begun = self._committing = False
        self._writing = True
        try:
            with ExitStack() as stack:
                stack.push(self._begin())  # begun already: it commits, or rolls back on an error
                self._begun = True
                yield
                self._committing = True  # from here on, a break leaves the outcome unknown
        finally:
            self._writing = False

    def acquire(
        self, run_id: str, owner: str, now: float, ttl: float, top: Lease | None = None
    ) -> tuple[Lease, int]:
        return self._again(partial(super().acquire, run_id, owner, now, ttl, top))

    def commit(self, batch: Batch, now: float) -> Refused:
        return self._again(partial(super().commit, batch, now))

    def _again(self, transaction: Callable[[], _T]) -> _T:
        """Run ``transaction`` again (on a new connection) when the connection was lost
        after it began and before its COMMIT was sent: the server rolled it back, nothing
        of it was written. (One that could not begin had waited for the server already.)"""
        for attempt in range(1, _ATTEMPTS + 1):
            try:
                return transaction()
            except JournalError as exc:
                lost = isinstance(exc.__cause__, self._psycopg.OperationalError)
                if attempt == _ATTEMPTS or not self._begun or self._committing or not lost:
                    raise
                if not self._connection_lost():
                    raise
        raise AssertionError("unreachable")

    def _begin(self) -> AbstractContextManager[object]:
        """A transaction begun on a live connection: one the server dropped while it was
        idle (a restart of the server, a fail-over, an idle timeout) is replaced first;
        nothing had been sent on it, so nothing is written twice."""
        transaction = self._connection().transaction()
        try:
            transaction.__enter__()
        except self._psycopg.OperationalError:
            if not self._connection_lost():
                raise
            transaction = self._connection().transaction()  # (connects again)
            transaction.__enter__()
        return transaction

    def _execute(self, statement: str, params: Sequence[object] = ()) -> list[tuple[Any, ...]]:
        """As ``SqlStore._execute``; a read outside a transaction (every statement outside
        one reads) that finds the connection dropped is sent again on a new one."""
        if self._in_transaction():
            return super()._execute(statement, params)
        try:
            return super()._execute(statement, params)
        except self._psycopg.OperationalError:
            if not self._connection_lost():
                raise
            return super()._execute(statement, params)

    def _in_transaction(self) -> bool:
        conn = self._connection()
        return bool(conn.info.transaction_status != self._psycopg.pq.TransactionStatus.IDLE)

    def _connection_lost(self) -> bool:
        if self._conn is None or not self._conn.closed:
            return False
        _log.warning("journal %s: the server closed the connection; connecting again", self.where)
        return True

    def _sql(self, statement: str) -> str:
        converted = self._statements.get(statement)
        if converted is None:
            converted = self._statements[statement] = statement.replace("?", "%s")
        return converted

    def _driver_errors(self) -> tuple[type[Exception], ...]:
        return (self._psycopg.Error,)

    def close(self) -> None:
        self._closed = True
        if self._conn is not None:
            with suppress(self._psycopg.Error):
                self._conn.close()


def _refuse_foreign_tables(store: _PostgresStore) -> None:
    """Refuse a database with no journal that has a table of a journal's name (another
    program's): creating the journal there would fail half-way, or mix the two."""
    names = [name for name in _TABLES if store._execute(f"SELECT to_regclass('{name}')")[0][0]]
    if names:
        tables = "table" if len(names) == 1 else "tables"
        raise JournalError(
            f"{store.where} has no regiment journal but has the {tables} "
            f"{', '.join(names)} of another program, so no journal can be made there; "
            "it was left untouched: point the journal at another database, or at another "
            "schema of this one (?options=-csearch_path%3Dmyschema in the URL)"
        )


@final
class PostgresJournal(BufferedJournal):
    """A journal in a PostgreSQL database, for several processes sharing runs.

    Open it with ``await PostgresJournal.open("postgresql://...")`` (or
    ``open_journal(url)``); the tables (``journal_meta``, ``journal_runs``,
    ``journal_records``) are created on first use, older ones migrated. Leases
    use the clock of the process (``clock``), so the machines sharing a
    database need clocks in step to well within a lease's ``ttl``.
    """

    @classmethod
    async def open(
        cls,
        url: str,
        *,
        clock: Callable[[], float] | None = None,
        connect_timeout: float = 10.0,
        reconnect_timeout: float = 15.0,
        lock_timeout: float = LOCK_TIMEOUT,
    ) -> Self:
        """Connect to ``url`` and prepare the schema.

        Args:
            url: ``postgresql://...``.
            clock: seconds since the epoch, for leases and timestamps (default ``time.time``).
            connect_timeout: how long one attempt to connect may take.
            reconnect_timeout: once open, how long a server that went away (a restart, a
                fail-over) is waited for, trying again with backoff, before a write or read
                fails with ``JournalError`` (and the run with it). Opening does not wait:
                a server that cannot be reached then fails at once.
            lock_timeout: how long a statement waits for a lock another session holds (a
                ``LOCK TABLE``, a migration, a long transaction) before it fails with a
                ``JournalError`` naming that session (unless the URL or role set one).

        Raises:
            JournalError: psycopg is missing (with the install line), the server cannot
                be reached, or the database holds a journal of a newer schema.
        """
        store = await anyio.to_thread.run_sync(
            partial(
                _PostgresStore,
                url,
                connect_timeout=connect_timeout,
                reconnect_timeout=reconnect_timeout,
                lock_timeout=lock_timeout,
            )
        )
        return cls(store, clock=clock)

    def __init__(self, store: _PostgresStore, *, clock: Callable[[], float] | None) -> None:
        super().__init__(store, clock=clock, threaded=True)
