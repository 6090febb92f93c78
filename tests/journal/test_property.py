"""Property: however appends of several runs interleave, each run's numbers are dense and ordered."""

from __future__ import annotations

import anyio
import anyio.lowlevel
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from regiment.journal import Journal, LeaseLost

from .records import Clock, created, event, new_id

pytestmark = pytest.mark.anyio

# One append call: (run, how many records, durable?, how many times to yield before it).
Append = tuple[int, int, bool, int]

appends = st.lists(
    st.tuples(st.integers(0, 2), st.integers(1, 3), st.booleans(), st.integers(0, 2)),
    min_size=1,
    max_size=25,
)


@settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(plan=appends, flush_every=st.integers(1, 10))
async def test_interleaved_appends_keep_sequence_numbers_dense_and_ordered(
    journal: Journal, plan: list[Append], flush_every: int
) -> None:
    run_ids = [new_id() for _ in range(3)]
    leases = [await journal.create_run(created(run_id), owner="w", ttl=60) for run_id in run_ids]
    returned: dict[int, list[int]] = {0: [], 1: [], 2: []}
    written: dict[int, list[int]] = {0: [], 1: [], 2: []}

    async def one_run(run: int) -> None:
        for number, (target, count, durable, yields) in enumerate(plan):
            if target != run:
                continue
            for _ in range(yields):
                await anyio.lowlevel.checkpoint()
            indexes = [number * 10 + i for i in range(count)]
            written[run] += indexes
            records = [event(run_ids[run], index) for index in indexes]
            returned[run] += await journal.append_all(leases[run], records, durable=durable)
            if number % flush_every == 0:
                await journal.flush()

    async with anyio.create_task_group() as tg:
        for run in range(3):
            tg.start_soon(one_run, run)
    for run, run_id in enumerate(run_ids):
        assert returned[run] == list(range(2, len(written[run]) + 2))
        entries = await journal.read(run_id)
        assert [entry.seq for entry in entries] == list(range(1, len(written[run]) + 2))
        assert [entry.record for entry in entries[1:]] == [event(run_id, i) for i in written[run]]


# One step of a run's life: the owner appends (durably or not), an earlier owner
# (a zombie) tries to append, or the owner stops beating and a new one takes over.
Step = tuple[str, bool]

lives = st.lists(
    st.tuples(st.sampled_from(["append", "zombie", "takeover"]), st.booleans()),
    min_size=1,
    max_size=20,
)


@settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(life=lives)
async def test_takeovers_fence_every_zombie_write_and_keep_the_owners_in_order(
    journal: Journal, clock: Clock, life: list[Step]
) -> None:
    run_id = new_id()
    owners = [await journal.create_run(created(run_id), owner="o0", ttl=60)]
    kept: list[int] = []
    for index, (action, durable) in enumerate(life):
        if action == "append":
            await journal.append(owners[-1], event(run_id, index), durable=durable)
            kept.append(index)
        elif action == "zombie" and len(owners) > 1:
            with pytest.raises(LeaseLost):
                await journal.append(owners[-2], event(run_id, index), durable=True)
        elif action == "takeover":
            clock.advance(61)
            owners.append(await journal.acquire(run_id, owner=f"o{len(owners)}", ttl=60))
    entries = await journal.read(run_id)
    assert [entry.seq for entry in entries] == list(range(1, len(kept) + 2))
    assert [entry.record for entry in entries[1:]] == [event(run_id, i) for i in kept]
    assert [lease.token for lease in owners] == list(range(1, len(owners) + 1))
