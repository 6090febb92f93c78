"""The SQLite journal: one file, WAL, one writer thread, group commit."""

from __future__ import annotations

import errno
import os
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any, Literal, Self, final

import anyio

from regiment.errors import ConfigError, JournalError
from regiment.journal._buffered import BufferedJournal
from regiment.journal._requests import INDEX
from regiment.journal._schema import CURRENT_VERSION, prepare, read_version
from regiment.journal._sql import SqlStore
from regiment.journal._sqlite_wal import switch_to_wal
from regiment.journal._store import Batch, Refused
from regiment.journal._views import Lease

__all__ = ("SqliteJournal",)

Synchronous = Literal["off", "normal", "full"]
_LEVELS: tuple[Synchronous, ...] = ("off", "normal", "full")


# SQLite's primary result codes for a file it cannot write (as against one it cannot read
# as a database): SQLITE_PERM, SQLITE_READONLY, SQLITE_IOERR, SQLITE_FULL, SQLITE_CANTOPEN.
_CANNOT_WRITE = frozenset({3, 8, 10, 13, 14})
_BUSY = 5  # SQLITE_BUSY: another connection held the lock for the whole busy timeout
_CANTOPEN = 14  # SQLITE_CANTOPEN: a read-only open with no -shm file and no right to make one


def _not_a_journal(path: Path, exc: Exception, *, read_only: bool) -> JournalError:
    code = getattr(exc, "sqlite_errorcode", None)
    if read_only and (isinstance(exc, OSError) or code == _CANTOPEN or code == 3):
        return JournalError(
            f"journal {path} cannot be read ({exc}): check that this process may read it "
            "and its directory"
        )
    if isinstance(exc, OSError) or (isinstance(code, int) and code & 0xFF in _CANNOT_WRITE):
        return JournalError(
            f"journal {path} cannot be opened for writing ({exc}); the journal writes the "
            f"file and creates {path.name}-wal and {path.name}-shm beside it: check that "
            f"{path} is a file (or not there yet), that its directory exists or can be made, "
            "that this process may write to both and that the disk has room; or point the "
            "journal at another file. A journal already there was left untouched."
        )
    return JournalError(
        f"{path} is not a regiment journal, or it is damaged ({exc}); it was left "
        "untouched: point the journal at another file, or move this one away"
    )


def open_read_only(path: Path, busy_timeout: float) -> sqlite3.Connection:
    """A connection that only reads ``path``, also where nothing may be written.

    SQLite reads a WAL journal through its ``-shm`` file, which it creates when missing;
    where it cannot (a read-only directory or file system) and there is no ``-wal``
    file either (the last writer closed cleanly, leaving every record in the file),
    the file is read as immutable. A ``-wal`` file with no way to read it is an error.
    """
    if not path.is_file():
        what = "a directory, not a journal file" if path.is_dir() else "not there"
        raise JournalError(
            f"journal {path} is {what} (reading never creates one): check the path, or run "
            "a goal with it first"
        )
    uri = f"{path.resolve().as_uri()}?mode=ro"
    conn = sqlite3.connect(
        uri, uri=True, timeout=busy_timeout, isolation_level=None, check_same_thread=False
    )
    try:
        conn.execute("SELECT count(*) FROM sqlite_master")
        return conn
    except sqlite3.OperationalError as exc:
        conn.close()
        if getattr(exc, "sqlite_errorcode", None) != _CANTOPEN:
            raise
        if Path(f"{path}-wal").exists():
            raise JournalError(
                f"journal {path} cannot be read read-only ({exc}): its {path.name}-wal file "
                f"holds records not yet in it, and SQLite reads them through {path.name}-shm, "
                "which it may not create there; let a process that may write the directory "
                "open the journal once (its last close folds the records in), or read a copy"
            ) from exc
    return sqlite3.connect(
        f"{uri}&immutable=1", uri=True, isolation_level=None, check_same_thread=False
    )


class _SqliteStore(SqlStore):
    def __init__(
        self,
        path: Path,
        *,
        busy_timeout: float,
        synchronous: Synchronous,
        read_only: bool,
        reader: bool = False,
    ) -> None:
        self.where = str(path)
        self._path = path.absolute()  # (the reads open it later: the same file if cwd moved)
        self._busy_timeout = busy_timeout
        self._read_only = read_only
        self._synchronous = self._level = synchronous  # asked for; the connection's now
        self._conn: sqlite3.Connection | None = None
        try:
            if read_only:
                self._conn = open_read_only(path, busy_timeout)
                self._check_readable()
                if not reader:  # (the journal's own reads' connection: warned already)
                    self.read_marks()
                return
            path.parent.mkdir(parents=True, exist_ok=True)
            self._conn = sqlite3.connect(
                path, timeout=busy_timeout, isolation_level=None, check_same_thread=False
            )
            self._open(synchronous)
            self.read_marks()
        except sqlite3.OperationalError as exc:
            self._close_quietly()
            if "locked" not in str(exc):
                raise _not_a_journal(path, exc, read_only=read_only) from exc
            raise JournalError(
                f"journal {path} stayed locked by another process for the whole busy timeout "
                f"({busy_timeout} s); try again when that process is done"
            ) from exc
        except (sqlite3.Error, OSError) as exc:
            self._close_quietly()
            raise _not_a_journal(path, exc, read_only=read_only) from exc
        except JournalError:
            self._close_quietly()
            raise

    def _open(self, synchronous: Synchronous) -> None:
        tables = self._tables()
        if tables and "journal_meta" not in tables:
            raise JournalError(
                f"{self.where} is an SQLite database but not a regiment journal (it has the "
                f"tables {', '.join(sorted(tables))}); it was left untouched: point the journal "
                "at another file"
            )
        # refuses a foreign or a newer one unwritten
        version = read_version(self._execute, self.where) if tables else None
        conn = self._connection()
        switch_to_wal(conn, self._busy_timeout)  # a journal's is already: no lock taken
        conn.execute(f"PRAGMA synchronous={synchronous.upper()}")
        indexed = bool(self._execute("SELECT 1 FROM sqlite_master WHERE name = ?", (INDEX,)))
        if version == CURRENT_VERSION and indexed:  # nothing to write, so no wait for the lock
            self._check_writable()  # another process may hold it a long while
            return
        with self._write_transaction():
            prepare(
                self._execute,
                has_meta="journal_meta" in self._tables(),
                blob="BLOB",
                where=self.where,
            )
            # A write that changes nothing: SQLite opens a file it may not write read-only
            # without a word (on a read-only mount with its -wal and -shm there, say), and
            # the first run would fail at its first record. It fails here, at the open.
            self._execute("UPDATE journal_meta SET value = value WHERE name = 'format'")

    def _check_writable(self) -> None:
        """Fail now if this process may not write the journal's files: SQLite opens one
        it may not write read-only without a word (on a read-only mount with its -wal
        and -shm there, say), and the first run would fail at its first record. Asked
        of the file system, with no write (``_open``'s, which showed it, waited for the
        write lock) and no open: closing a file descriptor of the file drops every lock
        SQLite holds on it in this process."""
        effective = os.access in os.supports_effective_ids
        for name in ("", "-wal", "-shm"):
            file = self._path.with_name(self._path.name + name)
            if (name == "" or file.exists()) and not os.access(
                file, os.W_OK, effective_ids=effective
            ):
                raise PermissionError(errno.EACCES, "this process may not write it", str(file))

    def _check_readable(self) -> None:
        """A journal opened read-only must be one of this schema: it cannot be migrated."""
        tables = self._tables()
        if "journal_meta" not in tables:
            raise JournalError(
                f"{self.where} is not a regiment journal (it has "
                f"{'the tables ' + ', '.join(sorted(tables)) if tables else 'no tables'}); "
                "it was left untouched: point the journal at another file"
            )
        version = read_version(self._execute, self.where)
        if version != CURRENT_VERSION:
            newer = version > CURRENT_VERSION
            raise JournalError(
                f"journal {self.where} has schema version {version} and this regiment reads "
                f"version {CURRENT_VERSION}; "
                + (
                    "upgrade regiment to read it."
                    if newer
                    else "it was opened read-only (as regiment runs, show and approvals "
                    "open it), which never migrates: migrate it by opening it once for "
                    "writing, where this process may write it (the next regiment run, "
                    "resume or approve with this --journal does; from Python, "
                    "`await open_journal(path)`, then close it), or read a copy made "
                    "writable."
                )
                + " It was left untouched."
            )

    def commit(self, batch: Batch, now: float) -> Refused:
        # Under "normal", a commit holding a durable record (a tool call's intent before its
        # body runs, say) runs under FULL: in WAL mode SQLite then fsyncs the -wal file as it
        # commits, which takes every commit before it to the disk too; the others, not.
        if self._synchronous == "normal":
            self._use("full" if batch.durable else "normal")
        return super().commit(batch, now)

    def acquire(
        self, run_id: str, owner: str, now: float, ttl: float, top: Lease | None = None
    ) -> tuple[Lease, int]:
        if self._synchronous == "normal":
            self._use("normal")
        return super().acquire(run_id, owner, now, ttl, top)

    def _use(self, level: Synchronous) -> None:
        """Set the connection's synchronous level for its next transactions (SQLite
        refuses to change it inside one; none is open between the store's calls)."""
        if level != self._level:
            with self._guard(f"setting synchronous={level.upper()}"):
                self._connection().execute(f"PRAGMA synchronous={level.upper()}")
            self._level = level

    def probe(self) -> None:
        """Nothing to reach for a file (see ``Store.probe``)."""

    def reader(self) -> _SqliteStore:
        """A read-only connection of its own: in WAL mode its reads never wait for a writer
        (this process's, waiting for another's lock, or another's)."""
        self._connection()  # ("closed" once this one is)
        return _SqliteStore(
            self._path,
            busy_timeout=self._busy_timeout,
            synchronous=self._synchronous,
            read_only=True,
            reader=True,
        )

    def _tables(self) -> set[str]:
        rows = self._execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        return {name for (name,) in rows}

    def _connection(self) -> sqlite3.Connection:
        if self._conn is None:
            raise JournalError(f"journal {self.where} is closed")
        return self._conn

    def _cursor(self) -> Any:
        return self._connection().cursor()

    @contextmanager
    def _write_transaction(self) -> Iterator[None]:
        if self._read_only:
            raise JournalError(
                f"journal {self.where} was opened read-only (read_only=True), so nothing can "
                "be written to it: open it without read_only to run, resume or decide"
            )
        conn = self._connection()
        conn.execute("BEGIN IMMEDIATE")  # the file's write lock, waiting up to the busy timeout
        try:
            yield
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                with suppress(sqlite3.Error):
                    conn.execute("ROLLBACK")
            raise

    @contextmanager
    def _guard(self, action: str) -> Iterator[None]:
        try:
            with super()._guard(action):
                yield
        except JournalError as exc:
            code = getattr(exc.__cause__, "sqlite_errorcode", None)
            if not isinstance(code, int) or code & 0xFF != _BUSY:
                raise
            raise JournalError(
                f"{exc}: another process held the file's write lock for the whole busy "
                f"timeout ({self._busy_timeout} s); stop what holds it (a long transaction "
                "in another program), or give SqliteJournal.open a longer busy_timeout"
            ) from exc.__cause__

    def _sql(self, statement: str) -> str:
        return statement

    def _driver_errors(self) -> tuple[type[Exception], ...]:
        return (sqlite3.Error,)

    def _close_quietly(self) -> None:
        if self._conn is not None:
            with suppress(sqlite3.Error):
                self._conn.close()
            self._conn = None

    def close(self) -> None:
        with self._guard("closing"):
            if self._conn is not None:
                self._conn.close()
        self._conn = None


def _level(synchronous: object) -> Synchronous:
    """``synchronous`` as one of the levels; SQLite itself takes a misspelt one as NORMAL."""
    for level in _LEVELS:
        if isinstance(synchronous, str) and synchronous.lower() == level:
            return level
    raise ConfigError(
        f"synchronous={synchronous!r} is not a level of SqliteJournal.open: use 'normal' "
        "(the default: the commits of durable records reach the disk), 'full' (every "
        "commit does) or 'off' (none does)"
    )


@final
class SqliteJournal(BufferedJournal):
    """A journal in one SQLite file: the default wherever a file is wanted.

    WAL mode, so readers never wait for the writer; one connection for the writes,
    used by one worker thread at a time (``anyio.to_thread`` with a capacity limiter
    of 1), and one for the reads, likewise, so a read never queues behind a write;
    group commit, so many appends share one transaction. Several processes may
    share the file: a write waits for another process's transaction up to
    ``busy_timeout`` seconds, then fails with ``JournalError``.

    Open it with ``await SqliteJournal.open(path)`` (or ``open_journal(path)``).
    """

    @classmethod
    async def open(
        cls,
        path: str | Path,
        *,
        clock: Callable[[], float] | None = None,
        busy_timeout: float = 30.0,
        synchronous: Synchronous = "normal",
        read_only: bool = False,
    ) -> Self:
        """Open ``path``, creating it (and its directory) if missing, migrating an older schema.

        Args:
            path: the journal file.
            clock: seconds since the epoch, for leases and timestamps (default ``time.time``).
            busy_timeout: how long a write waits for another process's transaction.
            synchronous: when a commit reaches the disk (an fsync of the ``-wal`` file).
                ``"normal"``: the commits that hold a record written durably (a tool
                call's intent before its body runs, its result, an approval's decision,
                a run's end or pause), and with each every commit before it; the others
                survive a crash of the process, not of the machine. ``"full"``: every
                commit. ``"off"``: none, not even those: a crash of the machine may lose
                any of the journal, or damage the file (for throw-away journals).
            read_only: only read it (list, get, read runs and approvals), never creating,
                migrating or writing anything, so it works where the process may not write
                (a read-only mount, say); a write raises ``JournalError``. The file must be
                there and of this regiment's schema version.

        Raises:
            JournalError: the file is not a journal, is damaged, or is of a newer schema;
                it is left untouched.
            ConfigError: ``synchronous`` is none of ``"off"``, ``"normal"``, ``"full"``.
        """
        level = _level(synchronous)
        store = await anyio.to_thread.run_sync(
            lambda: _SqliteStore(
                Path(path), busy_timeout=busy_timeout, synchronous=level, read_only=read_only
            )
        )
        return cls(store, clock=clock)

    def __init__(self, store: _SqliteStore, *, clock: Callable[[], float] | None) -> None:
        super().__init__(store, clock=clock, threaded=True)
