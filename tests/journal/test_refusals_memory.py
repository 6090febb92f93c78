"""A long-lived journal forgets a lease's refused writes once the lease is released:
the refusal is raised by ``release`` and not kept for the life of the journal."""

from __future__ import annotations

import gc

import pytest

from regiment.journal import Journal, LeaseLost

from .records import Clock, created, event, new_id

pytestmark = pytest.mark.anyio

TTL = 30.0


def _lease_lost_alive() -> int:
    gc.collect()
    return sum(isinstance(o, LeaseLost) for o in gc.get_objects())


async def test_released_zombie_leases_leave_no_refusal_behind(
    journal: Journal, clock: Clock
) -> None:
    before = _lease_lost_alive()
    for n in range(20):
        run_id = new_id()
        zombie = await journal.create_run(created(run_id), owner="a", ttl=TTL)
        clock.advance(TTL + 1)
        heir = await journal.acquire(run_id, owner="b", ttl=TTL)
        await journal.append(zombie, event(run_id, n))  # buffered: refused at its commit
        await journal.flush()
        with pytest.raises(LeaseLost):
            await journal.release(zombie)  # the refusal is reported once, here
        await journal.release(heir)
    assert _lease_lost_alive() == before  # the old journal kept all 20 for good
    await journal.close()  # reported already: nothing left to raise
