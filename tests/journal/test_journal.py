"""The shared suite: every backend (memory, SQLite, PostgreSQL) on asyncio and trio."""

from __future__ import annotations

import anyio
import msgspec
import pytest

from regiment.journal import (
    Journal,
    JournalError,
    RunFinished,
    StepDispatched,
    UnknownRun,
    nested_run_id,
    top_run_id,
)

from .records import Clock, created, event, new_id, one_of_each

pytestmark = pytest.mark.anyio

TTL = 30.0


async def test_every_kind_of_record_reads_back_equal_and_in_order(journal: Journal) -> None:
    run_id = new_id()
    lease = await journal.create_run(created(run_id), owner="w1", ttl=TTL)
    records = one_of_each(run_id)
    seqs = [await journal.append(lease, record) for record in records]
    assert seqs == list(range(2, len(records) + 2))
    entries = await journal.read(run_id)
    assert [entry.seq for entry in entries] == list(range(1, len(records) + 2))
    assert [entry.record for entry in entries] == [created(run_id), *records]
    assert entries[0].recorded_at.tzinfo is not None


async def test_append_all_returns_consecutive_numbers_and_read_after_skips(
    journal: Journal,
) -> None:
    run_id = new_id()
    lease = await journal.create_run(created(run_id), owner="w1", ttl=TTL)
    assert await journal.append_all(lease, [event(run_id, i) for i in range(5)]) == (2, 3, 4, 5, 6)
    assert await journal.append(lease, event(run_id, 5), durable=True) == 7
    tail = await journal.read(run_id, after=4)
    assert [entry.seq for entry in tail] == [5, 6, 7]


async def test_concurrent_durable_appends_of_many_runs_share_commits(journal: Journal) -> None:
    run_ids = [new_id() for _ in range(8)]
    leases = [await journal.create_run(created(r), owner="w", ttl=TTL) for r in run_ids]
    got: dict[str, list[int]] = {run_id: [] for run_id in run_ids}

    async def writer(index: int) -> None:
        for i in range(10):
            seq = await journal.append(leases[index], event(run_ids[index], i), durable=i % 3 == 0)
            got[run_ids[index]].append(seq)

    async with anyio.create_task_group() as tg:
        for index in range(len(run_ids)):
            tg.start_soon(writer, index)
    for run_id in run_ids:
        assert got[run_id] == list(range(2, 12))
        entries = await journal.read(run_id)
        assert [e.seq for e in entries] == list(range(1, 12))
        assert [e.record for e in entries[1:]] == [event(run_id, i) for i in range(10)]


async def test_runs_list_newest_first_with_status_filter_and_limit(
    journal: Journal, clock: Clock
) -> None:
    first, second, third = new_id(), new_id(), new_id()
    await journal.create_run(created(first, minutes=1, session="t-1"), owner="w", ttl=TTL)
    done = await journal.create_run(created(second, minutes=2), owner="w", ttl=TTL)
    await journal.create_run(created(third, minutes=3), owner="w", ttl=TTL)
    await journal.append(done, RunFinished(run_id=second, status="failed", error="boom"))
    listed = await journal.list_runs()
    assert [info.run_id for info in listed] == [third, second, first]
    assert [info.status for info in listed] == ["running", "failed", "running"]
    assert listed[2].session == "t-1"
    assert listed[2].team == "support"
    assert listed[2].started_at == created(first, minutes=1).created_at
    assert [i.run_id for i in await journal.list_runs(status="failed")] == [second]
    assert [i.run_id for i in await journal.list_runs(limit=2)] == [third, second]
    assert (await journal.get_run(second)).status == "failed"
    for huge in (2**63 - 1, 10**23):  # no limit, as said (10**23 did not bind: OverflowError)
        for status in (None, "running", "stalled"):
            wide = await journal.list_runs(status=status, limit=huge)
            assert wide == await journal.list_runs(status=status)


async def test_nested_runs_are_not_listed_but_read(journal: Journal, clock: Clock) -> None:
    top = new_id()
    nested = nested_run_id(top, 1, "s1")
    await journal.create_run(created(top, minutes=1, session="t-1"), owner="w", ttl=TTL)
    record = msgspec.structs.replace(created(nested, minutes=2, session="t-1"), parent=top)
    await journal.create_run(record, owner="w", ttl=TTL)
    clock.advance(TTL + 1)  # both lapse: 'stalled' is listed by a statement of its own
    for status in (None, "stalled"):
        assert [i.run_id for i in await journal.list_runs(status=status)] == [top]
        assert [i.run_id for i in await journal.list_runs(status=status, limit=1)] == [top]
    assert [r.run_id for r in await journal.session_history("t-1")] == [top]
    assert (await journal.get_run(nested)).status == "stalled"
    assert (await journal.read(nested))[0].record == record
    assert top_run_id(nested) == top
    assert top_run_id(top) is None


async def test_a_run_whose_lease_expired_lists_as_stalled(journal: Journal, clock: Clock) -> None:
    run_id = new_id()
    lease = await journal.create_run(created(run_id), owner="w", ttl=TTL)
    clock.advance(TTL - 1)
    assert (await journal.get_run(run_id)).status == "running"
    lease = await journal.renew(lease, ttl=TTL)
    clock.advance(TTL - 1)
    assert (await journal.get_run(run_id)).status == "running"
    clock.advance(2)
    assert (await journal.get_run(run_id)).status == "stalled"
    assert [i.run_id for i in await journal.list_runs(status="stalled")] == [run_id]
    assert await journal.list_runs(status="running") == ()


async def test_updated_at_follows_the_last_write(journal: Journal, clock: Clock) -> None:
    run_id = new_id()
    lease = await journal.create_run(created(run_id), owner="w", ttl=TTL)
    before = (await journal.get_run(run_id)).updated_at
    clock.advance(5)
    await journal.append(lease, event(run_id, 0), durable=True)
    after = (await journal.get_run(run_id)).updated_at
    assert (after - before).total_seconds() == pytest.approx(5)


async def test_unknown_runs_are_refused_with_the_journal_named(journal: Journal) -> None:
    for attempt in (
        journal.get_run("nope"),
        journal.read("nope"),
        journal.acquire("nope", owner="w", ttl=TTL),
    ):
        with pytest.raises(UnknownRun, match="has no run 'nope'") as caught:
            await attempt
        assert journal.where in str(caught.value)


async def test_a_run_id_cannot_be_created_twice(journal: Journal) -> None:
    run_id = new_id()
    await journal.create_run(created(run_id), owner="w", ttl=TTL)
    with pytest.raises(JournalError, match="already has a run"):
        await journal.create_run(created(run_id, goal="other"), owner="w2", ttl=TTL)
    assert (await journal.get_run(run_id)).goal == "refund 88213"


async def test_nothing_follows_the_result_of_a_run(journal: Journal) -> None:
    run_id = new_id()
    lease = await journal.create_run(created(run_id), owner="w", ttl=TTL)
    await journal.append(lease, RunFinished(run_id=run_id, status="completed"), durable=True)
    late = StepDispatched(run_id=run_id, plan_version=1, step_id="s9", worker="x")
    with pytest.raises(JournalError, match="has finished"):
        await journal.append(lease, late, durable=True)
    with pytest.raises(JournalError, match="already finished"):
        await journal.acquire(run_id, owner="w2", ttl=TTL)
    assert len(await journal.read(run_id)) == 2


async def test_a_lease_writes_only_its_own_run(journal: Journal) -> None:
    mine, theirs = new_id(), new_id()
    lease = await journal.create_run(created(mine), owner="w", ttl=TTL)
    await journal.create_run(created(theirs), owner="w", ttl=TTL)
    with pytest.raises(JournalError, match=f"cannot be written with the lease of run '{mine}'"):
        await journal.append(lease, event(theirs, 0))
    with pytest.raises(JournalError, match="cannot be written"):
        await journal.append_all(lease, [event(mine, 0), event(theirs, 1)])  # all or nothing
    assert await journal.append(lease, event(mine, 1), durable=True) == 2
    assert len(await journal.read(theirs)) == 1


async def test_a_closed_journal_refuses_work(location: str | None, clock: Clock) -> None:
    from regiment.journal import open_journal

    journal = await open_journal(location, clock=clock)
    await journal.close()
    with pytest.raises(JournalError, match="closed"):
        await journal.list_runs()


async def test_a_listing_encodes_to_the_fields_runs_json_prints(journal: Journal) -> None:
    run_id = new_id()
    await journal.create_run(created(run_id, session="t-9"), owner="w", ttl=TTL)
    (info,) = [i for i in await journal.list_runs() if i.run_id == run_id]
    line = msgspec.json.decode(msgspec.json.encode(info))
    assert list(line) == ["run_id", "team", "goal", "status", "started_at", "updated_at", "session"]
    assert line["started_at"] == "2027-01-01T00:00:00Z"
    assert (line["status"], line["session"]) == ("running", "t-9")
