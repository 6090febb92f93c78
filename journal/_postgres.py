"""The PostgreSQL journal: several processes share runs through one database.

psycopg 3's synchronous driver runs in a worker thread (so the journal works
under asyncio and trio alike), one connection, one call at a time. Ownership is
safe across processes because every lease check and every write runs in one
transaction that locks the run's row (``SELECT ... FOR UPDATE``); creating or
migrating the schema holds a transaction-scoped advisory lock. A connection the
server closed while it was idle is replaced before a transaction begins on it (and
before a read outside one is sent again): nothing had been sent, so nothing is
written twice; one that breaks inside a transaction fails that commit.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, ExitStack, contextmanager, suppress
from typing import TYPE_CHECKING, Any, Self, final

import anyio

from regiment.errors import JournalError
from regiment.journal._buffered import BufferedJournal
from regiment.journal._schema import prepare
from regiment.journal._sql import SqlStore

if TYPE_CHECKING:
    import psycopg

__all__ = ("INSTALL_HINT", "PostgresJournal")

INSTALL_HINT = "PostgreSQL journals need psycopg: pip install 'regiment[postgres]'"
_log = logging.getLogger("regiment.journal")
_SCHEMA_LOCK = 0x7265_6769  # "regi": serialises schema creation and migration across processes


def _import_psycopg() -> Any:
    try:
        import psycopg
    except ImportError as exc:
        raise JournalError(INSTALL_HINT) from exc
    return psycopg


def _display(url: str, psycopg_module: Any) -> str:
    """The URL without its password, for messages."""
    try:
        parts = psycopg_module.conninfo.conninfo_to_dict(url)
    except psycopg_module.Error:
        return "postgresql://(unparseable URL)"
    user = f"{parts['user']}@" if parts.get("user") else ""
    port = f":{parts['port']}" if parts.get("port") else ""
    return f"postgresql://{user}{parts.get('host', '')}{port}/{parts.get('dbname', '')}"


class _PostgresStore(SqlStore):
    _for_update = " FOR UPDATE"

    def __init__(self, url: str, *, connect_timeout: float) -> None:
        self._psycopg = _import_psycopg()
        self._url = url
        self._connect_timeout = connect_timeout
        self.where = _display(url, self._psycopg)
        self._statements: dict[str, str] = {}
        self._conn: psycopg.Connection[Any] | None = None
        self._closed = False
        with self._guard("connecting"):
            self._conn = self._connect()
            try:
                with self._write_transaction():
                    self._execute("SELECT pg_advisory_xact_lock(?)", (_SCHEMA_LOCK,))
                    (found,) = self._execute("SELECT to_regclass('journal_meta')")[0]
                    prepare(
                        self._execute, has_meta=found is not None, blob="BYTEA", where=self.where
                    )
            except BaseException:
                self._conn.close()
                raise

    def _connect(self) -> psycopg.Connection[Any]:
        timeout = max(1, round(self._connect_timeout))
        connection: psycopg.Connection[Any] = self._psycopg.connect(
            self._url, autocommit=True, connect_timeout=timeout
        )
        return connection

    def _connection(self) -> psycopg.Connection[Any]:
        if self._closed or self._conn is None:
            raise JournalError(f"journal {self.where} is closed")
        if self._conn.closed:  # the server went away; a new connection may reach it again
            self._conn = self._connect()
        return self._conn

    def _cursor(self) -> Any:
        return self._connection().cursor()

    @contextmanager
    def _write_transaction(self) -> Iterator[None]:
        with ExitStack() as stack:
            stack.push(self._begin())  # begun already: it commits, or rolls back on an error
            yield

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
    ) -> Self:
        """Connect to ``url`` and prepare the schema.

        Raises:
            JournalError: psycopg is missing (with the install line), the server cannot
                be reached, or the database holds a journal of a newer schema.
        """
        store = await anyio.to_thread.run_sync(
            lambda: _PostgresStore(url, connect_timeout=connect_timeout)
        )
        return cls(store, clock=clock)

    def __init__(self, store: _PostgresStore, *, clock: Callable[[], float] | None) -> None:
        super().__init__(store, clock=clock, threaded=True)
