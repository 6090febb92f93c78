"""The PostgreSQL database: schema versions, a server-side failure, the missing extra, the URL."""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from functools import partial

import anyio
import psycopg
import pytest

from regiment.errors import ConfigError
from regiment.journal import JournalError, PostgresJournal, open_journal

from .durable_team import make_team
from .records import Clock, created, event, new_id
from .v1_schema import RUN_ID, write_v1

pytestmark = pytest.mark.anyio

TTL = 30.0


async def test_a_database_of_a_newer_schema_is_refused_untouched(postgres_url: str) -> None:
    await (await open_journal(postgres_url)).close()
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute("UPDATE journal_meta SET value = '99' WHERE name = 'schema_version'")
    with pytest.raises(
        JournalError, match=r"newer regiment \(schema version 99; this one reads up to 2\)"
    ):
        await open_journal(postgres_url)
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        row = conn.execute(
            "SELECT value FROM journal_meta WHERE name = 'schema_version'"
        ).fetchone()
    assert row == ("99",)


async def test_a_database_with_another_programs_journal_runs_table_is_refused_untouched(
    postgres_url: str,
) -> None:
    # It failed half-way through creating the journal, as "connecting failed: relation
    # "journal_runs" already exists".
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute(b"CREATE TABLE journal_runs (ticket TEXT)")
    with pytest.raises(JournalError) as caught:
        await open_journal(postgres_url)
    assert "has no regiment journal but has the table journal_runs of another program" in (
        str(caught.value)
    )
    assert "it was left untouched: point the journal at another database" in str(caught.value)
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        assert conn.execute(b"SELECT to_regclass('journal_meta')").fetchone() == (None,)
        columns = conn.execute(
            b"SELECT column_name FROM information_schema.columns"
            b" WHERE table_name = 'journal_runs' AND table_schema = current_schema()"
        ).fetchall()
    assert columns == [("ticket",)]


async def test_a_version_1_database_is_migrated_and_keeps_its_runs(
    postgres_url: str, clock: Clock
) -> None:
    with psycopg.connect(postgres_url, autocommit=True) as conn:

        def execute(statement: str, params: Sequence[object]) -> object:
            return conn.execute(statement.encode(), tuple(params))

        write_v1(execute, blob="BYTEA", mark="%s")
    journal = await open_journal(postgres_url, clock=clock)
    try:
        assert [e.record for e in await journal.read(RUN_ID)] == [created(RUN_ID), event(RUN_ID, 0)]
        assert (await journal.get_run(RUN_ID)).status == "stalled"
        lease = await journal.acquire(RUN_ID, owner="new", ttl=TTL)
        assert await journal.append(lease, event(RUN_ID, 1), durable=True) == 3
    finally:
        await journal.close()
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        version = conn.execute("SELECT value FROM journal_meta WHERE name = 'schema_version'")
        assert version.fetchone() == ("2",)


def _drop_connections(url: str, *, allow: bool = True) -> None:
    """End every session on the journal's database, as a restart of the server would;
    ``allow=False``: the database also refuses new connections (it stays "down")."""
    elsewhere = url.split("?")[0].rsplit("/", 1)[0] + "/template1"
    with psycopg.connect(elsewhere, autocommit=True) as admin:
        admin.execute(f"ALTER DATABASE postgres ALLOW_CONNECTIONS {str(allow).lower()}".encode())
        admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = 'postgres'"
        )


async def test_a_connection_the_server_dropped_while_idle_is_replaced(
    postgres_url: str, clock: Clock, caplog: pytest.LogCaptureFixture
) -> None:
    # A restart of the server ended the journal's idle connection: the next commit
    # failed with it, and so did every run with a record in that batch, though the
    # server was back and nothing had been sent.
    journal = await PostgresJournal.open(postgres_url, clock=clock)
    try:
        run_id = new_id()
        lease = await journal.create_run(created(run_id), owner="w", ttl=TTL)
        await journal.append(lease, event(run_id, 0))
        assert len(await journal.read(run_id)) == 2  # (the reads' connection, open)
        _drop_connections(postgres_url)
        assert await journal.append(lease, event(run_id, 1), durable=True) == 3
        _drop_connections(postgres_url)
        assert [e.seq for e in await journal.read(run_id)] == [1, 2, 3]  # a read, likewise
    finally:
        await journal.close()
    assert caplog.text.count("the server closed the connection; connecting again") == 2


async def test_a_database_that_stays_down_fails_the_write_and_the_run_never_continues(
    postgres_url: str, clock: Clock
) -> None:
    journal = await PostgresJournal.open(postgres_url, clock=clock, reconnect_timeout=0.3)
    run_id = new_id()
    lease = await journal.create_run(created(run_id), owner="w", ttl=TTL)
    await journal.append(lease, event(run_id, 0))
    _drop_connections(postgres_url, allow=False)
    try:
        with pytest.raises(JournalError, match=r"writing 2 records failed"):
            await journal.append(lease, event(run_id, 1), durable=True)
    finally:
        _drop_connections(postgres_url)  # (and it is back)
    with pytest.raises(JournalError, match=r"writing 2 records failed"):
        await journal.append(lease, event(run_id, 2), durable=True)  # the run must stop
    assert [e.seq for e in await journal.read(run_id)] == [1]  # reconnected for reading
    await journal.close()


class _Seen(logging.Handler):
    """Sets ``event`` at the first record of ``regiment.journal`` that says ``words``."""

    def __init__(self, words: str) -> None:
        super().__init__()
        self.words = words
        self.event = threading.Event()

    def emit(self, record: logging.LogRecord) -> None:
        if self.words in record.getMessage():
            self.event.set()


async def test_a_server_that_comes_back_while_the_journal_waits_for_it_loses_no_write(
    postgres_url: str, clock: Clock
) -> None:
    # A restart of the server failed the next write (and its run) when the server could
    # not be reached at that moment: now the journal tries again with backoff, and the
    # write lands once the server is back.
    journal = await PostgresJournal.open(postgres_url, clock=clock)
    seen = _Seen("the server cannot be reached")
    logging.getLogger("regiment.journal").addHandler(seen)
    try:
        run_id = new_id()
        lease = await journal.create_run(created(run_id), owner="w", ttl=TTL)
        await journal.append(lease, event(run_id, 0))

        async def write() -> None:
            try:
                await journal.append(lease, event(run_id, 1), durable=True)
            finally:
                seen.event.set()  # (a write that failed at once ends the wait too)

        _drop_connections(postgres_url, allow=False)
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(write)
                await anyio.to_thread.run_sync(seen.event.wait)  # it waits for the server
                _drop_connections(postgres_url)  # the server takes connections again
        finally:
            _drop_connections(postgres_url)
        assert [e.seq for e in await journal.read(run_id)] == [1, 2, 3]
    finally:
        logging.getLogger("regiment.journal").removeHandler(seen)
        await journal.close()


async def test_a_commit_whose_connection_was_terminated_mid_transaction_is_run_again(
    postgres_url: str, clock: Clock, caplog: pytest.LogCaptureFixture
) -> None:
    # pg_terminate_backend of the journal's connection while its commit waited for a row
    # lock failed that commit, and its run: the server had rolled it back, nothing was
    # written. Now it runs again on a new connection, once.
    journal = await PostgresJournal.open(postgres_url, clock=clock)
    try:
        run_id = new_id()
        lease = await journal.create_run(created(run_id), owner="w", ttl=TTL)
        async with anyio.create_task_group() as tg:
            with (
                psycopg.connect(postgres_url, autocommit=True) as holder,
                holder.transaction(),
            ):
                holder.execute(
                    b"SELECT 1 FROM journal_runs WHERE run_id = %s FOR UPDATE", (run_id,)
                )
                tg.start_soon(partial(journal.append, lease, event(run_id, 0), durable=True))
                waiter = await _waiting_for_a_lock(holder)
                holder.execute(b"SELECT pg_terminate_backend(%s)", (waiter,))
        assert [e.seq for e in await journal.read(run_id)] == [1, 2]
        assert await journal.append(lease, event(run_id, 1), durable=True) == 3
    finally:
        await journal.close()
    assert "the server closed the connection; connecting again" in caplog.text


async def _waiting_for_a_lock(holder: psycopg.Connection[tuple[object, ...]]) -> int:
    """The backend that waits for a lock ``holder`` holds (polled: the server's state)."""
    while True:
        row = holder.execute(
            b"SELECT pid FROM pg_stat_activity WHERE wait_event_type = 'Lock'"
            b" AND pid <> pg_backend_pid()"
        ).fetchone()
        if row is not None:
            return int(str(row[0]))
        await anyio.sleep(0.01)


async def test_the_url_in_messages_has_no_password(postgres_url: str) -> None:
    with_password = postgres_url.replace("postgres@", "postgres:hunter2@")
    journal = await open_journal(with_password)
    try:
        assert "hunter2" not in journal.where
        assert journal.where.startswith("postgresql://postgres@127.0.0.1:")
        with pytest.raises(JournalError) as caught:
            await journal.get_run("nope")
        assert "hunter2" not in str(caught.value)
    finally:
        await journal.close()


async def test_an_unreachable_server_is_a_journal_error_naming_it(postgres_url: str) -> None:
    gone = postgres_url.rsplit("/", 1)[0] + "/no_such_database"
    with pytest.raises(
        JournalError, match=r"journal postgresql://.*/no_such_database: connecting failed"
    ):
        await open_journal(gone)


async def test_without_psycopg_the_error_is_the_install_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(__import__("sys").modules, "psycopg", None)
    with pytest.raises(JournalError) as caught:
        await open_journal("postgresql://db.example/runs")
    assert str(caught.value) == "PostgreSQL journals need psycopg: pip install 'regiment[postgres]'"


async def test_a_goal_or_session_holding_nul_is_refused_before_the_run_starts(
    postgres_url: str,
) -> None:
    # PostgreSQL refuses NUL in text: the run was a JournalError (a service answered 503,
    # "post it again once the journal is back", which never helped). Now it is refused
    # before it starts, on every backend alike.
    journal = await open_journal(postgres_url)
    try:
        async with make_team().start(journal=journal) as running:
            with pytest.raises(ConfigError, match=r"the goal holds a NUL character .* position 5"):
                await running.run("order\x0088213")
            with pytest.raises(ConfigError, match="the session holds a NUL character"):
                await running.run("order 88213", session="desk\x007")
        assert await journal.list_runs() == ()
    finally:
        await journal.close()


async def test_a_session_frozen_in_a_transaction_is_ended_by_the_server(postgres_url: str) -> None:
    """A process frozen mid-transaction (SIGSTOP) held its run's row lock, and another
    process's take-over waited for it without end; the journal's session now has an
    idle-in-transaction timeout, unless the URL (or role, or server) set one."""
    own = postgres_url + ("&" if "?" in postgres_url else "?")
    own += "options=-cidle_in_transaction_session_timeout%3D3min"
    for url, expected in ((postgres_url, "10s"), (own, "3min")):
        journal = await PostgresJournal.open(url)
        try:
            connection = journal._store._conn  # type: ignore[attr-defined]
            (value,) = connection.execute("SHOW idle_in_transaction_session_timeout").fetchone()
            assert value == expected
        finally:
            await journal.close()
