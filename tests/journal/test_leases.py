"""Ownership on every backend: one owner at a time, takeover after expiry, zombies fenced off."""

from __future__ import annotations

import pytest

from regiment.journal import Journal, JournalError, LeaseHeld, LeaseLost

from .records import Clock, created, event, new_id

pytestmark = pytest.mark.anyio

TTL = 30.0


async def test_acquire_is_refused_while_the_owner_beats(journal: Journal, clock: Clock) -> None:
    run_id = new_id()
    lease = await journal.create_run(created(run_id), owner="host-a:11", ttl=TTL)
    with pytest.raises(LeaseHeld, match=r"owned by 'host-a:11'.*alive for another 30\.0 s"):
        await journal.acquire(run_id, owner="host-b:22", ttl=TTL)
    clock.advance(TTL - 1)
    await journal.renew(lease, ttl=TTL)
    clock.advance(TTL - 1)
    with pytest.raises(LeaseHeld):
        await journal.acquire(run_id, owner="host-b:22", ttl=TTL)


async def test_a_lease_that_stopped_beating_is_taken_over_and_the_zombie_is_fenced(
    journal: Journal, clock: Clock
) -> None:
    run_id = new_id()
    zombie = await journal.create_run(created(run_id), owner="a", ttl=TTL)
    await journal.append(zombie, event(run_id, 0), durable=True)
    clock.advance(TTL + 1)
    heir = await journal.acquire(run_id, owner="b", ttl=TTL)
    assert (heir.token, heir.owner) == (zombie.token + 1, "b")
    assert (await journal.get_run(run_id)).status == "running"
    with pytest.raises(LeaseLost, match=r"fencing token 1, but 'b' took the run over \(token 2\)"):
        await journal.append(zombie, event(run_id, 99), durable=True)
    with pytest.raises(LeaseLost):
        await journal.append(zombie, event(run_id, 100))  # stays refused, buffered or not
    with pytest.raises(LeaseLost):
        await journal.renew(zombie, ttl=TTL)
    assert await journal.append(heir, event(run_id, 1), durable=True) == 3
    entries = await journal.read(run_id)
    assert [e.seq for e in entries] == [1, 2, 3]
    assert [e.record for e in entries[1:]] == [event(run_id, 0), event(run_id, 1)]


async def test_a_zombies_buffered_write_is_rejected_at_its_commit(
    journal: Journal, clock: Clock
) -> None:
    run_id = new_id()
    zombie = await journal.create_run(created(run_id), owner="a", ttl=TTL)
    assert await journal.append(zombie, event(run_id, 0)) == 2  # buffered, not yet committed
    clock.advance(TTL + 1)
    heir = await journal.acquire(run_id, owner="b", ttl=TTL)  # commits the buffer first
    await journal.append(zombie, event(run_id, 1))  # buffered: the refusal comes at the commit
    await journal.flush()  # commits; the refusal waits for the zombie's own next call
    with pytest.raises(LeaseLost):
        await journal.flush(zombie)
    with pytest.raises(LeaseLost):
        await journal.append(zombie, event(run_id, 2))
    assert [e.seq for e in await journal.read(run_id)] == [1, 2]
    await journal.release(heir)


async def test_an_unreported_refusal_surfaces_at_close(location: str | None, clock: Clock) -> None:
    from regiment.journal import open_journal

    journal = await open_journal(location, clock=clock)
    run_id = new_id()
    zombie = await journal.create_run(created(run_id), owner="a", ttl=TTL)
    clock.advance(TTL + 1)
    await journal.acquire(run_id, owner="b", ttl=TTL)
    await journal.append(zombie, event(run_id, 1))
    with pytest.raises(LeaseLost):
        await journal.close()


async def test_release_lets_another_owner_in_at_once(journal: Journal) -> None:
    run_id = new_id()
    lease = await journal.create_run(created(run_id), owner="a", ttl=TTL)
    await journal.append(lease, event(run_id, 0))
    await journal.release(lease)
    assert (await journal.get_run(run_id)).status == "stalled"
    assert [e.seq for e in await journal.read(run_id)] == [1, 2]  # release committed it
    with pytest.raises(JournalError, match="released"):
        await journal.append(lease, event(run_id, 1))
    heir = await journal.acquire(run_id, owner="b", ttl=TTL)
    assert heir.token == 2
    assert await journal.append(heir, event(run_id, 1), durable=True) == 3


async def test_the_same_owner_cannot_hold_a_run_twice(journal: Journal) -> None:
    run_id = new_id()
    await journal.create_run(created(run_id), owner="a", ttl=TTL)
    with pytest.raises(LeaseHeld):
        await journal.acquire(run_id, owner="a", ttl=TTL)


async def test_a_zombies_release_does_not_free_the_heirs_run(
    journal: Journal, clock: Clock
) -> None:
    run_id = new_id()
    zombie = await journal.create_run(created(run_id), owner="a", ttl=TTL)
    clock.advance(TTL + 1)
    await journal.acquire(run_id, owner="b", ttl=TTL)
    await journal.release(zombie)
    assert (await journal.get_run(run_id)).status == "running"
    with pytest.raises(LeaseHeld, match="'b'"):
        await journal.acquire(run_id, owner="c", ttl=TTL)
