"""A read beside buffered writes sees each run as a prefix of what was appended.

A read commits this process's buffered records first, unless a commit is under way (it
then reads what is committed), and every commit takes the buffer from its start: so a
read, in this process (the journal that writes) or in another (a second journal object
on the same file or database), never sees a record without the ones before it (a tool
call's result without its intent, a gap in the sequence numbers). Checked with runs
writing at once while two readers list and read them all the time.
"""

from __future__ import annotations

import random

import anyio
import anyio.lowlevel
import pytest

from regiment.journal import (
    Entry,
    Journal,
    RunCreated,
    ToolCallFinished,
    ToolCallStarted,
    open_journal,
)

from .records import Clock, created, event, intent, new_id, result

pytestmark = pytest.mark.anyio

TTL = 60.0
_RUNS, _CALLS = 6, 12


async def _write(journal: Journal, rng: random.Random) -> None:
    run_id = new_id()
    lease = await journal.create_run(created(run_id), owner="w", ttl=TTL)
    for index in range(_CALLS):
        await journal.append(lease, event(run_id, index), durable=rng.random() < 0.1)
        await journal.append(lease, intent(run_id, index), durable=True)
        await anyio.sleep(rng.random() * 0.002)
        await journal.append(lease, result(run_id, index))
        await anyio.sleep(rng.random() * 0.002)


def _torn(run_id: str, entries: tuple[Entry, ...]) -> list[str]:
    """What in ``entries`` (one read of the run) is not a prefix of its records."""
    wrong = []
    seqs = [entry.seq for entry in entries]
    if seqs != list(range(1, len(seqs) + 1)):
        wrong.append(f"{run_id}: sequence {seqs}")
    records = [entry.record for entry in entries]
    if records and not isinstance(records[0], RunCreated):
        wrong.append(f"{run_id}: first record {type(records[0]).__name__}")
    started: set[int] = set()
    for record in records:
        if isinstance(record, ToolCallStarted):
            started.add(record.call_index)
        elif isinstance(record, ToolCallFinished) and record.call_index not in started:
            wrong.append(f"{run_id}: the result of call {record.call_index} without its intent")
    return wrong


async def test_reads_beside_buffered_writes_see_every_run_as_a_prefix(
    location: str | None, clock: Clock
) -> None:
    writer = await open_journal(location, clock=clock)
    other = writer if location is None else await open_journal(location, clock=clock)
    wrong: list[str] = []
    reads = 0
    done = anyio.Event()

    async def read(journal: Journal) -> None:
        nonlocal reads
        while not done.is_set():
            for info in await journal.list_runs():
                wrong.extend(_torn(info.run_id, await journal.read(info.run_id)))
                reads += 1
            await anyio.lowlevel.checkpoint()

    try:
        async with anyio.create_task_group() as readers:
            readers.start_soon(read, writer)
            readers.start_soon(read, other)
            async with anyio.create_task_group() as writers:
                for n in range(_RUNS):
                    writers.start_soon(_write, writer, random.Random(n))
            done.set()
        assert wrong == []
        assert reads > _RUNS  # (they read while the runs wrote)
        finals = [await writer.read(info.run_id) for info in await writer.list_runs()]
        assert sorted(len(entries) for entries in finals) == [1 + 3 * _CALLS] * _RUNS
    finally:
        if other is not writer:
            await other.close()
        await writer.close()
