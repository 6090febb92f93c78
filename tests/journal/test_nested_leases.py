"""A nested team's run belongs to whoever owns the top run it serves, on every backend.

Taking a run over takes the leases its old owner held on its nested runs (at any depth)
with it: the old owner's late writes to them are refused, and the new owner acquires
them at once. They were left to the old owner: a woken owner journaled its nested run
``cancelled`` under the new owner (whose step then got a cancelled report), and the new
owner waited for the nested run's lease and failed the step with ``LeaseHeld``. Nor
may the old owner start or take up a nested run of a run another owner holds.
"""

from __future__ import annotations

import pytest

from regiment.journal import Journal, Lease, LeaseHeld, LeaseLost, RunFinished, nested_run_id

from .records import Clock, created, event, new_id

pytestmark = pytest.mark.anyio

TTL = 30.0


async def test_taking_a_run_over_takes_its_old_owners_nested_runs_with_it(
    journal: Journal, clock: Clock
) -> None:
    top, neighbour = new_id(), new_id()
    step, done, decided = (nested_run_id(top, 1, s) for s in ("t1", "t2", "t3"))
    deeper = nested_run_id(step, 1, "s1")
    other = f"{top}0"  # its id begins with the top run's, but it is another run
    beside = nested_run_id(other, 1, "t1")
    old: dict[str, Lease] = {}
    for run_id in (top, other, step, deeper, done, decided, beside, neighbour):
        old[run_id] = await journal.create_run(created(run_id), owner="a", ttl=TTL)
    ended = RunFinished(run_id=done, status="completed")
    await journal.append(old[done], ended, durable=True)
    await journal.release(old[decided])
    clock.advance(TTL - 1)
    for run_id in (step, deeper, other, beside):  # alive: only the top run's lease lapses
        old[run_id] = await journal.renew(old[run_id], ttl=TTL)
    clock.advance(2)
    decider = await journal.acquire(decided, owner="d", ttl=TTL)  # the top run is not held

    await journal.acquire(top, owner="b", ttl=TTL)

    with pytest.raises(LeaseLost):
        await journal.append(old[step], event(step, 1), durable=True)
    with pytest.raises(LeaseLost):
        await journal.renew(old[deeper], ttl=TTL)
    with pytest.raises(LeaseHeld, match=f"run '{top}' is owned by 'b'"):
        await journal.acquire(step, owner="a", ttl=TTL)  # the old owner cannot take it up
    with pytest.raises(LeaseLost, match=f"{top}'.*was taken over by 'b'"):
        await journal.create_run(created(nested_run_id(top, 1, "t4")), owner="a", ttl=TTL)
    # The new owner takes them at once, though the old owner's leases had not lapsed.
    for run_id in (step, deeper):
        assert (await journal.acquire(run_id, owner="b", ttl=TTL)).token == 3
    assert (await journal.get_run(done)).status == "completed"
    # Other leases are not the old owner's of this run: they go on.
    await journal.append(decider, event(decided, 1), durable=True)
    for run_id in (other, beside, neighbour):
        await journal.append(old[run_id], event(run_id, 1), durable=True)


async def test_the_owner_of_the_top_run_starts_and_takes_up_its_nested_runs(
    journal: Journal, clock: Clock
) -> None:
    top = new_id()
    await journal.create_run(created(top), owner="a", ttl=TTL)
    step = nested_run_id(top, 1, "t1")
    lease = await journal.create_run(created(step), owner="a", ttl=TTL)
    await journal.release(lease)
    assert (await journal.acquire(step, owner="a", ttl=TTL)).token == 2
    clock.advance(TTL + 1)  # the top run's lease lapsed: its nested runs are free to take
    assert (await journal.acquire(step, owner="d", ttl=TTL)).token == 3


async def test_an_owner_whose_top_lease_is_stale_may_not_start_or_take_up_nested_runs(
    journal: Journal, clock: Clock
) -> None:
    # A froze (SIGSTOP); b took the top run over, then let it go (a pause for approval):
    # the top run has no owner now, but a's lease of it is stale, and a must stop.
    top = new_id()
    stale = await journal.create_run(created(top), owner="a", ttl=TTL)
    step = nested_run_id(top, 1, "t1")
    await journal.create_run(created(step), owner="a", ttl=TTL, above=stale)
    clock.advance(TTL + 1)
    taken = await journal.acquire(top, owner="b", ttl=TTL)
    await journal.release(taken)

    with pytest.raises(LeaseLost, match=f"{top}'.*token 1.*took that run over since .token 2"):
        await journal.create_run(
            created(nested_run_id(top, 1, "t2")), owner="a", ttl=TTL, above=stale
        )
    with pytest.raises(LeaseLost, match="this process must stop working on it"):
        await journal.acquire(step, owner="a", ttl=TTL, above=stale)
    assert (await journal.get_run(top)).status == "stalled"
    # The new owner, back on the run, starts and takes up its nested runs with its lease.
    resumed = await journal.acquire(top, owner="b", ttl=TTL)
    assert (await journal.acquire(step, owner="b", ttl=TTL, above=resumed)).token == 3
    fresh = nested_run_id(top, 1, "t3")
    await journal.create_run(created(fresh), owner="b", ttl=TTL, above=resumed)
