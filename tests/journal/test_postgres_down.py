"""A PostgreSQL server stopped with ``pg_ctl stop`` while a journal is open.

Writes wait for it (up to ``reconnect_timeout``) and land once it is back. Reads do not:
a listing, a run's records or the pending approvals queued behind the waiting write (or
waited a whole ``reconnect_timeout`` themselves) before failing; they now fail at once
with a ``JournalError`` saying the journal is unavailable, and work again once the
server is back.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path

import anyio
import pytest

from regiment.journal import JournalError, PostgresJournal, patient_reads

from .records import Clock, created, event, new_id
from .test_postgres import TTL, _Seen

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from pg_server import PostgresServer, running_server

pytestmark = pytest.mark.anyio

_WAIT = 60.0  # reconnect_timeout: longer than the test may take, so a read behind it hangs


@pytest.fixture
def server() -> Iterator[PostgresServer]:
    """A server of its own: this test stops it and starts it again."""
    with running_server(fsync=False) as started:
        yield started


async def _unavailable(read: Callable[[], Awaitable[object]]) -> str:
    with pytest.raises(JournalError) as refused:
        await read()
    return str(refused.value)


async def test_reads_fail_at_once_while_the_server_is_down_and_writes_wait_for_it(
    server: PostgresServer, clock: Clock
) -> None:
    journal = await PostgresJournal.open(server.url, clock=clock, reconnect_timeout=_WAIT)
    seen = _Seen("the server cannot be reached")
    logging.getLogger("regiment.journal").addHandler(seen)
    try:
        run_id = new_id()
        lease = await journal.create_run(created(run_id), owner="w", ttl=TTL)
        await anyio.to_thread.run_sync(server.halt)
        # Nothing waits for the server yet: the read's own one attempt fails.
        alone = await _unavailable(lambda: journal.get_run(run_id))
        assert f"journal {journal.where} is unavailable: the server cannot be reached" in alone
        written: list[int] = []

        async def write() -> None:
            written.append(await journal.append(lease, event(run_id, 0), durable=True))

        async with anyio.create_task_group() as tg:
            tg.start_soon(write)
            await anyio.to_thread.run_sync(seen.event.wait)  # the write waits for the server
            for read in (
                lambda: journal.read(run_id),
                lambda: journal.list_runs(),
                lambda: journal.pending_approvals(),
                lambda: journal.pending_approvals(run_id),
            ):
                assert "is unavailable" in await _unavailable(read)
            await anyio.to_thread.run_sync(server.start_again)
        assert written == [2]  # the write waited, and landed
        assert [entry.seq for entry in await journal.read(run_id)] == [1, 2]
        assert [info.run_id for info in await journal.list_runs()] == [run_id]
    finally:
        logging.getLogger("regiment.journal").removeHandler(seen)
        await journal.close()


async def test_a_runs_own_read_waits_for_the_server_as_its_writes_do(
    server: PostgresServer, clock: Clock
) -> None:
    # A session's history, an approval's look-up, a resume's replay are part of a run in
    # progress: a restart of the server holds them up (as the run's writes), not fails them.
    journal = await PostgresJournal.open(server.url, clock=clock, reconnect_timeout=_WAIT)
    seen = _Seen("the server cannot be reached")
    logging.getLogger("regiment.journal").addHandler(seen)
    try:
        run_id = new_id()
        await journal.create_run(created(run_id), owner="w", ttl=TTL)
        await anyio.to_thread.run_sync(server.halt)
        read: list[int] = []

        async def patient() -> None:
            with patient_reads():
                read.extend(entry.seq for entry in await journal.read(run_id))

        async with anyio.create_task_group() as tg:
            tg.start_soon(patient)
            await anyio.to_thread.run_sync(seen.event.wait)  # the read waits for the server
            assert "is unavailable" in await _unavailable(lambda: journal.get_run(run_id))
            await anyio.to_thread.run_sync(server.start_again)
        assert read == [1]
    finally:
        logging.getLogger("regiment.journal").removeHandler(seen)
        await journal.close()


async def test_a_read_that_would_commit_first_fails_at_once_and_the_records_wait(
    server: PostgresServer, clock: Clock
) -> None:
    # A service's runs buffer records all the time: the first read after the server went
    # away led their commit, and so waited for the server as a write does.
    journal = await PostgresJournal.open(server.url, clock=clock, reconnect_timeout=_WAIT)
    try:
        run_id = new_id()
        lease = await journal.create_run(created(run_id), owner="w", ttl=TTL)
        await journal.append(lease, event(run_id, 0))  # buffered, not committed
        await anyio.to_thread.run_sync(server.halt)
        assert "is unavailable" in await _unavailable(lambda: journal.list_runs())
        await anyio.to_thread.run_sync(server.start_again)
        assert await journal.append(lease, event(run_id, 1), durable=True) == 3
        assert [entry.seq for entry in await journal.read(run_id)] == [1, 2, 3]
    finally:
        await journal.close()
