"""Runs created, written and released at once share commits, on every backend.

Before, ``create_run`` and ``release`` were a transaction each (one fsync each on
PostgreSQL), so a service starting many runs at once spent most of its journal time
on them; now they go in the group commit with the records.
"""

from __future__ import annotations

import anyio
import psycopg
import pytest

from regiment.errors import JournalError, LeaseLost
from regiment.journal import Journal, Lease, open_journal

from .records import Clock, created, event, new_id

pytestmark = pytest.mark.anyio

TTL = 30.0
RUNS = 40


async def _lifetimes(journal: Journal, run_ids: list[str]) -> None:
    """Each run created, one record written durably, released: all at once."""

    async def one(run_id: str) -> None:
        lease = await journal.create_run(created(run_id), owner="w", ttl=TTL)
        await journal.append(lease, event(run_id, 0), durable=True)
        await journal.release(lease)

    async with anyio.create_task_group() as tg:
        for run_id in run_ids:
            tg.start_soon(one, run_id)


async def test_runs_made_at_once_are_all_written_and_released(journal: Journal) -> None:
    run_ids = [new_id() for _ in range(RUNS)]
    await _lifetimes(journal, run_ids)
    for run_id in run_ids:
        assert len(await journal.read(run_id)) == 2  # RunCreated and the event
        assert (await journal.get_run(run_id)).status == "stalled"  # released, not finished


async def test_a_taken_run_id_is_refused_and_its_batch_mates_are_written(
    journal: Journal,
) -> None:
    taken = new_id()
    await journal.create_run(created(taken), owner="first", ttl=TTL)
    fresh = [new_id() for _ in range(5)]
    made: dict[str, Lease] = {}
    refused: list[JournalError] = []

    async def create(run_id: str, goal: str) -> None:
        try:
            made[run_id] = await journal.create_run(created(run_id, goal=goal), owner="w", ttl=TTL)
        except JournalError as exc:
            refused.append(exc)

    async with anyio.create_task_group() as tg:  # one commit carries all six
        for run_id in fresh:
            tg.start_soon(create, run_id, "new")
        tg.start_soon(create, taken, "a second try")
    assert [str(exc) for exc in refused] == [f"journal {journal.where} already has a run {taken!r}"]
    assert sorted(made) == sorted(fresh)
    assert (await journal.get_run(taken)).goal == "refund 88213"  # the first one's, untouched
    for run_id, lease in made.items():
        await journal.append(lease, event(run_id, 0), durable=True)
        assert len(await journal.read(run_id)) == 2


async def _renew_all(journal: Journal, leases: list[Lease]) -> dict[str, Lease | LeaseLost]:
    renewed: dict[str, Lease | LeaseLost] = {}

    async def one(lease: Lease) -> None:
        try:
            renewed[lease.run_id] = await journal.renew(lease, ttl=TTL)
        except LeaseLost as exc:
            renewed[lease.run_id] = exc

    async with anyio.create_task_group() as tg:
        for lease in leases:
            tg.start_soon(one, lease)
    return renewed


async def test_heartbeats_at_once_are_kept_and_a_fenced_one_is_refused_alone(
    journal: Journal, clock: Clock
) -> None:
    leases = [await journal.create_run(created(new_id()), owner="a", ttl=TTL) for _ in range(6)]
    clock.advance(TTL + 1)  # every lease lapsed; one run is taken over
    zombie = leases[0]
    await journal.acquire(zombie.run_id, owner="b", ttl=TTL)
    renewed = await _renew_all(journal, leases)
    lost = renewed.pop(zombie.run_id)
    assert isinstance(lost, LeaseLost)
    assert "'b' took the run over" in str(lost)
    for lease in leases[1:]:
        kept = renewed[lease.run_id]
        assert isinstance(kept, Lease)
        assert kept.expires_at == lease.expires_at + TTL + 1
        assert (await journal.get_run(lease.run_id)).status == "running"


async def test_postgres_commits_runs_made_at_once_together(postgres_url: str) -> None:
    """Counted as transaction ids the server handed out (only writing transactions get one)."""
    journal = await open_journal(postgres_url)
    try:
        with psycopg.connect(postgres_url, autocommit=True) as counter:

            def xid() -> int:
                row = counter.execute("SELECT pg_current_xact_id()::text").fetchone()
                assert row is not None
                return int(row[0])

            before = xid()
            await _lifetimes(journal, [new_id() for _ in range(RUNS)])
            writes = xid() - before - 1  # the second xid() took one too
            leases = [
                await journal.create_run(created(new_id()), owner="w", ttl=TTL) for _ in range(RUNS)
            ]
            before = xid()
            await _renew_all(journal, leases)
            beats = xid() - before - 1
    finally:
        await journal.close()
    # one create, one commit and one release each would be at least 2 * RUNS
    assert writes <= 10, f"{RUNS} runs at once took {writes} write transactions"
    assert beats <= 3, f"{RUNS} heartbeats at once took {beats} write transactions"
