"""What journaling costs per record: memory, SQLite and PostgreSQL, batched and not.

    .venv/bin/python bench/journal.py            # about a minute; starts its own PostgreSQL
    .venv/bin/python bench/journal.py --no-postgres

Each case appends the same records (one ``EventRecorded`` of ~100 bytes JSON,
like an event of a run) and reports appends per second and microseconds per
record, median of 5 measurements after a warm-up. Modes:

- ``per-record commit``: every append is ``durable=True`` in one sequential run,
  so every record is its own transaction (what a journal without batching does).
- ``batched``: appends are buffered and committed every 64 records (a durable
  append, like a tool call intent, every 64th): group commit in one run.
- ``group commit, 50 runs``: 50 concurrent runs each appending durably; the
  commits of whoever waits at the same moment share one transaction.
- ``group commit, 1,000 runs``: the same with 1,000 runs of 5 records each.

The ratio column divides a case's per-record cost by the in-memory journal's,
measured in the same process. PostgreSQL runs with ``fsync`` on (a real server's
durability); SQLite with ``synchronous=NORMAL`` (durable against a crash of the
process, the case resume is for).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path

import anyio
from pg_server import running_server

from regiment._json import JsonObject
from regiment.journal import EventRecorded, Journal, RunCreated, open_journal

RECORDS = 2_000
BATCH = 64
RUNS = 50
MANY = 1_000
REPEATS = 5


def _created(run_id: str) -> RunCreated:
    return RunCreated(
        run_id=run_id, team="bench", config_hash="h", goal="bench", created_at=datetime.now(UTC)
    )


def _event(run_id: str, index: int) -> EventRecorded:
    payload: JsonObject = {"step_id": f"s{index % 10}", "plan_version": 1, "output": "x" * 40}
    return EventRecorded(run_id=run_id, kind="StepCompleted", event=payload)


async def _one_run(journal: Journal, tag: str, records: int, durable_every: int) -> float:
    run_id = f"{tag}-{time.perf_counter_ns()}"
    lease = await journal.create_run(_created(run_id), owner="bench", ttl=600)
    events = [_event(run_id, i) for i in range(records)]
    started = time.perf_counter()
    for index, record in enumerate(events):
        await journal.append(lease, record, durable=index % durable_every == durable_every - 1)
    await journal.flush()
    return time.perf_counter() - started


async def _many_runs(journal: Journal, tag: str, records: int, runs: int) -> float:
    per_run = records // runs
    leases = [
        await journal.create_run(
            _created(f"{tag}-{i}-{time.perf_counter_ns()}"), owner="b", ttl=600
        )
        for i in range(runs)
    ]

    async def run(index: int) -> None:
        lease = leases[index]
        for i in range(per_run):
            await journal.append(lease, _event(lease.run_id, i), durable=True)

    started = time.perf_counter()
    async with anyio.create_task_group() as tg:
        for index in range(runs):
            tg.start_soon(run, index)
    return time.perf_counter() - started


async def _median(measure: Callable[[], Awaitable[float]]) -> float:
    await measure()
    return statistics.median([await measure() for _ in range(REPEATS)])


async def _cases(name: str, spec: str | None, records: int) -> list[tuple[str, str, int, float]]:
    journal = await open_journal(spec)
    modes: list[tuple[str, Callable[[], Awaitable[float]]]] = [
        ("per-record commit", lambda: _one_run(journal, "p", records, 1)),
        (f"batched (commit every {BATCH})", lambda: _one_run(journal, "b", records, BATCH)),
        (f"group commit, {RUNS} runs", lambda: _many_runs(journal, "g", records, RUNS)),
        (f"group commit, {MANY:,} runs", lambda: _many_runs(journal, "m", MANY * 5, MANY)),
    ]
    counts = [records, records, records, MANY * 5]
    try:
        return [
            (name, mode, count, await _median(measure))
            for (mode, measure), count in zip(modes, counts, strict=True)
        ]
    finally:
        await journal.close()


def _print(rows: list[tuple[str, str, int, float]]) -> None:
    memory = next(
        seconds / count
        for name, mode, count, seconds in rows
        if name == "memory" and mode.startswith("batched")
    )
    print(f"{'journal':<12}{'mode':<28}{'appends/s':>12}{'µs/record':>12}{'vs memory':>12}")
    for name, mode, count, seconds in rows:
        per_record = seconds / count
        print(
            f"{name:<12}{mode:<28}{count / seconds:>12,.0f}{per_record * 1e6:>12.1f}"
            f"{per_record / memory:>11.1f}x"
        )


async def _all(postgres_url: str | None) -> None:
    with tempfile.TemporaryDirectory() as directory:
        rows = await _cases("memory", None, RECORDS)
        rows += await _cases("sqlite", str(Path(directory) / "bench.db"), RECORDS // 4)
        if postgres_url is not None:
            rows += await _cases("postgres", postgres_url, RECORDS // 4)
    _print(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-postgres", action="store_true", help="skip PostgreSQL")
    args = parser.parse_args()
    if args.no_postgres:
        anyio.run(_all, None)
        return
    with running_server(fsync=True) as server:
        anyio.run(_all, server.url)


if __name__ == "__main__":
    main()
