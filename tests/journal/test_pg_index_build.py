"""An existing PostgreSQL journal opened for writing gets the request-key index
(``journal_records_approval``) without blocking its writers.

Before, it was built by a plain ``CREATE INDEX`` inside the opening transaction: its lock
on ``journal_records`` queued behind any transaction that wrote the table, and every
writer of every process queued behind it until the index was built (on a large journal, a
long while). It is built concurrently now, outside a transaction; a build that ran out of
``lock_timeout`` is a warning, not a failed open, and the INVALID index it leaves is
dropped and built again at the next opening.
"""

from __future__ import annotations

import logging

import anyio
import psycopg
import pytest

from regiment.journal import Lease, PostgresJournal
from regiment.journal._requests import find_approval

from .records import Clock, approval, created, event, new_id

pytestmark = pytest.mark.anyio

TTL = 30.0
INDEX = "journal_records_approval"
_STATE = (
    "SELECT i.indisvalid, i.indisunique, pg_get_indexdef(i.indexrelid) FROM pg_index i"
    " WHERE i.indexrelid = to_regclass(%s)"
)
_BUILDING = (  # another session's index build, waiting for a lock
    "SELECT count(*) FROM pg_stat_activity WHERE pid <> pg_backend_pid()"
    " AND query LIKE 'CREATE INDEX%%' AND wait_event_type = 'Lock'"
)
_RIGHT = "btree (key) WHERE (kind = 'approval_requested'::text)"  # its method and columns


def _state(url: str) -> tuple[bool, bool, str] | None:
    """The index's validity, uniqueness and definition from its method on (``None``: there
    is none)."""
    with psycopg.connect(url, autocommit=True) as admin:
        row = admin.execute(_STATE, (INDEX,)).fetchone()
    return None if row is None else (bool(row[0]), bool(row[1]), str(row[2]).split(" USING ")[1])


def _admin(url: str, statement: str) -> None:
    with psycopg.connect(url, autocommit=True) as admin:
        admin.execute(statement.encode())


async def _old_journal(url: str, clock: Clock) -> tuple[PostgresJournal, Lease]:
    """A journal with a run holding two approval requests, as one made before the index."""
    journal = await PostgresJournal.open(url, clock=clock, lock_timeout=0.5)
    run_id = new_id()
    lease = await journal.create_run(created(run_id), owner="w", ttl=TTL)
    await journal.append(lease, approval(run_id, "a1"), durable=True)
    await journal.append(lease, approval(run_id, "a2"), durable=True)
    _admin(url, f"DROP INDEX {INDEX}")
    return journal, lease


async def _until_building(url: str) -> None:
    with anyio.fail_after(60):  # (a hang guard)
        while True:
            with psycopg.connect(url, autocommit=True) as admin:
                row = admin.execute(_BUILDING).fetchone()
            if row is not None and row[0]:
                return
            await anyio.sleep(0.02)


async def test_the_index_is_built_while_another_process_keeps_writing(
    postgres_url: str, clock: Clock, caplog: pytest.LogCaptureFixture
) -> None:
    writer, lease = await _old_journal(postgres_url, clock)
    run_id = lease.run_id
    caplog.set_level(logging.INFO, logger="regiment.journal")
    opened: list[PostgresJournal] = []
    # A transaction that wrote the table (another program's): the build waits for it.
    holder = psycopg.connect(postgres_url)
    try:
        holder.execute(b"LOCK TABLE journal_records IN ROW EXCLUSIVE MODE")

        async def opening() -> None:
            opened.append(await PostgresJournal.open(postgres_url, clock=clock))

        async with anyio.create_task_group() as tg:
            tg.start_soon(opening)
            await _until_building(postgres_url)
            # Meanwhile the writer commits, again and again (it waited behind the build's
            # lock, and failed after its lock_timeout, 0.5 s).
            with anyio.fail_after(30):  # (a hang guard)
                seqs = [
                    await writer.append(lease, event(run_id, i), durable=True) for i in range(5)
                ]
            assert seqs == [4, 5, 6, 7, 8]
            state = _state(postgres_url)
            assert state is not None
            assert state[0] is False
            assert opened == []
            holder.rollback()  # its transaction ends: the build goes on and ends
    finally:
        holder.close()
    try:
        assert _state(postgres_url) == (True, False, _RIGHT)
        found = await find_approval(opened[0], "a2")
        assert found is not None
        assert found.request.run_id == run_id
        assert [e.seq for e in await opened[0].read(run_id)] == list(range(1, 9))
    finally:
        await opened[0].close()
        await writer.close()
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []


async def test_a_build_that_ran_out_of_time_warns_and_the_next_opening_rebuilds_it(
    postgres_url: str, clock: Clock, caplog: pytest.LogCaptureFixture
) -> None:
    writer, lease = await _old_journal(postgres_url, clock)
    run_id = lease.run_id
    await writer.close()
    caplog.set_level(logging.WARNING, logger="regiment.journal")
    holder = psycopg.connect(postgres_url)
    try:
        holder.execute(b"LOCK TABLE journal_records IN ROW EXCLUSIVE MODE")
        pid = holder.info.backend_pid
        journal = await PostgresJournal.open(postgres_url, clock=clock, lock_timeout=0.5)
    finally:
        holder.close()
    try:  # opened all the same, and it works
        found = await find_approval(journal, "a1")
        assert found is not None
        assert found.request.run_id == run_id
    finally:
        await journal.close()
    (warned,) = [r.getMessage() for r in caplog.records]
    assert f": building index {INDEX} waited 500ms for a lock on the journal" in warned, warned
    assert f"held by pid {pid}, " in warned
    assert "the journal works without it" in warned
    assert "built again the next time the journal is opened for writing" in warned
    state = _state(postgres_url)
    assert state is not None
    assert state[0] is False
    caplog.clear()
    await (await PostgresJournal.open(postgres_url, clock=clock)).close()
    (warned,) = [r.getMessage() for r in caplog.records]
    assert f"index {INDEX} was left INVALID by a concurrent build that did not finish" in warned
    assert "dropping it and building it again" in warned
    assert _state(postgres_url) == (True, False, _RIGHT)


async def test_an_invalid_index_of_another_definition_is_replaced(
    postgres_url: str, clock: Clock, caplog: pytest.LogCaptureFixture
) -> None:
    # A build of another program (or hand) under the index's name that failed: INVALID.
    writer, lease = await _old_journal(postgres_url, clock)
    run_id = lease.run_id
    await writer.close()
    with pytest.raises(psycopg.errors.UniqueViolation):
        _admin(
            postgres_url,
            f"CREATE UNIQUE INDEX CONCURRENTLY {INDEX} ON journal_records (kind)"
            " WHERE kind = 'approval_requested'",
        )
    state = _state(postgres_url)
    assert state is not None
    assert state[:2] == (False, True)
    caplog.set_level(logging.WARNING, logger="regiment.journal")
    journal = await PostgresJournal.open(postgres_url, clock=clock)
    try:
        assert _state(postgres_url) == (True, False, _RIGHT)
        found = await find_approval(journal, "a2")
        assert found is not None
        assert found.request.run_id == run_id
    finally:
        await journal.close()
    (warned,) = [r.getMessage() for r in caplog.records]
    assert "was left INVALID" in warned


_AGE = (  # how long the session's transaction has been open, in seconds
    "SELECT extract(epoch FROM clock_timestamp() - xact_start) FROM pg_stat_activity WHERE pid = %s"
)


async def _until_older_than(url: str, pid: int, seconds: float) -> None:
    """Once session ``pid``'s transaction has been open ``seconds``."""
    with anyio.fail_after(60):  # (a hang guard)
        while True:
            with psycopg.connect(url, autocommit=True) as admin:
                row = admin.execute(_AGE, (pid,)).fetchone()
            if row is not None and row[0] is not None and float(row[0]) > seconds:
                return
            await anyio.sleep(0.05)


async def test_an_opening_does_not_wait_for_a_long_transaction_to_build_the_index(
    postgres_url: str, clock: Clock, caplog: pytest.LogCaptureFixture
) -> None:
    # Another program's transaction on the journal, open for a while: before, the opening
    # (the build in it) waited until it ended, or until lock_timeout, then warned and left
    # an INVALID index. The build is left to a later opening now, and nothing waits.
    writer, lease = await _old_journal(postgres_url, clock)
    run_id = lease.run_id
    await writer.close()
    caplog.set_level(logging.INFO, logger="regiment.journal")
    holder = psycopg.connect(postgres_url, application_name="report")
    try:
        holder.execute(b"LOCK TABLE journal_records IN ROW EXCLUSIVE MODE")
        pid = holder.info.backend_pid
        await _until_older_than(postgres_url, pid, 2.5)
        with anyio.fail_after(20):  # (before: held until the holder's end, past this)
            journal = await PostgresJournal.open(postgres_url, clock=clock, lock_timeout=30)
        try:
            assert _state(postgres_url) is None  # not built, and no INVALID one left
            found = await find_approval(journal, "a2")  # the look-up works without it
            assert found is not None
            assert found.request.run_id == run_id
            other = await journal.create_run(created(new_id()), owner="w", ttl=TTL)
            assert await journal.append(other, event(other.run_id, 1), durable=True) == 2
        finally:
            await journal.close()
    finally:
        holder.close()
    said = [r.getMessage() for r in caplog.records]
    (deferred,) = [m for m in said if "is not built now" in m]
    assert f"index {INDEX} is not built now: building it would wait for the transaction" in (
        deferred
    )
    assert f"of session pid {pid} (report, idle in transaction), open for " in deferred
    assert "built the next time the journal is opened for writing" in deferred
    assert [r for r in caplog.records if r.levelno >= logging.WARNING] == []
    # With that transaction over, the next opening builds it.
    await (await PostgresJournal.open(postgres_url, clock=clock)).close()
    assert _state(postgres_url) == (True, False, _RIGHT)
