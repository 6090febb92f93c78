"""Another session holding a lock on a PostgreSQL journal (a ``LOCK TABLE``, a migration, a
long transaction): the journal waits up to its ``lock_timeout``, then fails with a
``JournalError`` naming the session and what to do, and nothing is lost or half-written.

Before, every statement of ours waited for such a lock without end: ``regiment runs``,
``show``, ``resume`` and a run's first write hung with no word, as did opening the journal
while another process held the schema's advisory lock (a migration under way).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import psycopg
import pytest

from regiment.journal import JournalError, PostgresJournal
from tests.cli.helpers import run_cli

from .records import Clock, created, event, new_id

pytestmark = pytest.mark.anyio

TTL = 30.0
_SCHEMA_LOCK = 0x7265_6769  # the journal's advisory lock: creating or migrating the schema
_PATIENCE = 0.5  # lock_timeout, seconds: the tests wait this long, not the 30 s default


@contextmanager
def _holding(url: str, statement: str) -> Iterator[psycopg.Connection[tuple[object, ...]]]:
    """Another program's session, its transaction holding what ``statement`` takes."""
    holder = psycopg.connect(url)
    try:
        holder.execute(statement.encode())
        yield holder
    finally:
        holder.close()  # (rolls its transaction back: the lock is freed)


def _says_who(message: str, holder: psycopg.Connection[tuple[object, ...]], what: str) -> None:
    pid = holder.info.backend_pid
    assert "waited 500ms for a lock on the journal that another session holds" in message
    assert f"held by pid {pid}, user postgres, from 127.0.0.1, in a transaction for " in message
    assert f"last statement: {what}" in message
    assert f"SELECT pg_terminate_backend(PID) for {pid}" in message
    assert "PostgresJournal.open(url, lock_timeout=SECONDS)" in message


async def _journal(url: str, clock: Clock) -> PostgresJournal:
    return await PostgresJournal.open(url, clock=clock, lock_timeout=_PATIENCE)


@pytest.mark.parametrize(
    "statement",
    [
        "LOCK TABLE journal_meta IN ACCESS EXCLUSIVE MODE",
        f"SELECT pg_advisory_xact_lock({_SCHEMA_LOCK})",  # another process migrating
    ],
)
async def test_opening_while_another_session_holds_the_schema_names_it(
    postgres_url: str, clock: Clock, statement: str
) -> None:
    await (await _journal(postgres_url, clock)).close()  # the journal exists
    with _holding(postgres_url, statement) as holder:
        with pytest.raises(JournalError) as refused:
            await _journal(postgres_url, clock)
        assert ": opening waited 500ms" in str(refused.value)
        _says_who(str(refused.value), holder, statement)
    await (await _journal(postgres_url, clock)).close()  # once it is freed, it opens


async def test_a_locked_table_fails_reads_and_writes_then_nothing_is_lost(
    postgres_url: str, clock: Clock
) -> None:
    journal = await _journal(postgres_url, clock)
    try:
        run_id = new_id()
        lease = await journal.create_run(created(run_id), owner="w", ttl=TTL)
        await journal.append(lease, event(run_id, 0), durable=True)
        statement = "LOCK TABLE journal_records IN ACCESS EXCLUSIVE MODE"
        with _holding(postgres_url, statement) as holder:
            with pytest.raises(JournalError) as read:
                await journal.read(run_id)
            assert f": reading run {run_id!r} waited 500ms" in str(read.value)
            _says_who(str(read.value), holder, statement)
            with pytest.raises(JournalError) as wrote:
                await journal.append(lease, event(run_id, 1), durable=True)
            _says_who(str(wrote.value), holder, statement)
        # Freed: the failed write was rolled back whole; the run stopped there, and is
        # taken up again through the same journal at once, its records in order.
        assert [entry.record for entry in await journal.read(run_id)] == [
            created(run_id),
            event(run_id, 0),
        ]
        again = await journal.acquire(run_id, owner="w", ttl=TTL)
        assert await journal.append(again, event(run_id, 1), durable=True) == 3
        assert [entry.seq for entry in await journal.read(run_id)] == [1, 2, 3]
    finally:
        await journal.close()


async def test_regiment_runs_and_resume_say_who_holds_the_lock_and_the_urls_timeout_is_kept(
    postgres_url: str, clock: Clock
) -> None:
    journal = await _journal(postgres_url, clock)
    run_id = new_id()
    await journal.create_run(created(run_id), owner="w", ttl=TTL)
    await journal.close()
    # The URL's own lock_timeout (1 s) is the journal's, not the 30 s default.
    url = f"{postgres_url}%20-clock_timeout%3D1s"
    statement = "LOCK TABLE journal_runs IN ACCESS EXCLUSIVE MODE"
    with _holding(postgres_url, statement) as holder:
        # It hung; then, once a lock_timeout was set, it ended in a traceback.
        code, out, err = await run_cli("runs", "--journal", url)
        assert (code, out) == (2, "")
        (line,) = err.splitlines()
        assert line.startswith("regiment: error: journal postgresql://")
        assert ": listing runs waited 1s for a lock on the journal" in line
        assert f"held by pid {holder.info.backend_pid}, " in line
    statement = "LOCK TABLE journal_records IN ACCESS EXCLUSIVE MODE"
    with _holding(postgres_url, statement) as holder:
        # It ended in a traceback: reading the run's team file on record was not guarded.
        code, out, err = await run_cli("resume", run_id, "--journal", url)
        assert (code, out) == (2, "")
        (line,) = err.splitlines()
        assert f": reading run {run_id!r} waited 1s for a lock on the journal" in line
        assert f"held by pid {holder.info.backend_pid}, " in line
    code, out, err = await run_cli("runs", "--journal", url)
    assert (code, err) == (0, "")
    assert len(out.splitlines()) == 1
