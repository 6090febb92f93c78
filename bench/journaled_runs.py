"""Many journaled runs at once, as a service runs them: no journal, SQLite, PostgreSQL.

``.venv/bin/python bench/journaled_runs.py [--runs 300] [--backend trio] [--no-postgres]``
starts one team and runs ``--runs`` goals at once on it, three times per journal
(the median is printed). Each run is a 3-step plan (two steps at once, then one that
depends on them); each step calls one tool, whose intent is written durably before
its body runs and its result after, so every step waits for the journal twice. The
worker takes every step at once (``max_concurrent_steps`` = the steps in flight), so
the journal, not the worker's bound, sets the pace. PostgreSQL is a throw-away local
server with ``fsync`` on (``bench/pg_server.py``); SQLite is a file in WAL mode.

It prints runs/s, the ratio to the same burst with no journal, and how late the event
loop ran during the bursts (p99 of how late a 10 ms periodic sleep woke: a journal that
did its commits on the loop would stall every run for as long as each commit takes),
measured in one process, one journal after the other. SQLite runs twice: with its default
``synchronous="normal"`` (the commits holding an intent, a result or a run's end are
fsynced, the rest not) and with ``"full"`` (every commit fsynced).
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import anyio
from bench_util import lag_probe, median
from pg_server import running_server

from regiment import Planner, ScriptedModel, Team, Worker, text_response, tool
from regiment.journal import Journal, SqliteJournal
from regiment.models import ModelRequest, ModelResponse, tool_call_response

__all__ = ("main",)

_PLAN = json.dumps(
    {
        "steps": [
            {"id": "a", "description": "pay a"},
            {"id": "b", "description": "pay b"},
            {"id": "c", "description": "pay c", "depends_on": ["a", "b"]},
        ]
    }
)


@tool(idempotency_key=("order",))
async def pay(order: str) -> str:
    """Pay an order (instantly)."""
    return f"paid {order}"


def _brain(request: ModelRequest) -> ModelResponse | str:
    if request.role == "planner":
        return _PLAN
    if request.role == "worker":
        if len(request.messages) == 1:
            return tool_call_response("pay", {"order": request.messages[0].text[-8:]})
        return text_response("paid")
    return text_response("all paid")


def _team(runs: int) -> Team:
    model = ScriptedModel(_brain, keep_requests=0)
    worker = Worker(
        name="w", description="pays", model=model, tools=[pay], max_concurrent_steps=2 * runs
    )
    return Team(name="pay", planner=Planner(model=model), workers=[worker])


async def _burst_s(journal: str | None, runs: int, full: bool) -> tuple[float, float]:
    """The median seconds of three bursts, and the loop lag's p99 (ms) over all three
    (``full``: an SQLite file opened with ``synchronous="full"``)."""
    if full and journal is not None:
        async with await SqliteJournal.open(journal, synchronous="full") as opened:
            return await _bursts(opened, runs)
    return await _bursts(journal, runs)


async def _bursts(journal: Journal | str | None, runs: int) -> tuple[float, float]:
    async with _team(runs).start(journal=journal) as running:
        await running.run("warm up")
        samples = []
        async with lag_probe() as probe:
            for _ in range(3):
                started = time.perf_counter()
                async with anyio.create_task_group() as tg:
                    for index in range(runs):
                        tg.start_soon(_one, running, index)
                samples.append(time.perf_counter() - started)
        return median(samples), probe.p99_ms()


async def _one(running: object, index: int) -> None:
    result = await running.run(f"pay order {index}")  # type: ignore[attr-defined]
    assert result.status == "completed", result.status


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=300, help="runs at once")
    parser.add_argument("--backend", choices=("asyncio", "trio"), default="asyncio")
    parser.add_argument("--no-postgres", action="store_true", help="skip PostgreSQL")
    args = parser.parse_args()
    figures: list[tuple[str, float, float]] = []

    def measure(name: str, journal: str | None, full: bool = False) -> None:
        seconds, lag_ms = anyio.run(_burst_s, journal, args.runs, full, backend=args.backend)
        figures.append((name, args.runs / seconds, lag_ms))

    measure("no journal", None)
    with tempfile.TemporaryDirectory() as tmp:
        measure("SQLite (WAL, normal)", str(Path(tmp) / "runs.db"))
        measure("SQLite (WAL, full)", str(Path(tmp) / "full.db"), full=True)
    if not args.no_postgres:
        with running_server() as server:
            measure("PostgreSQL (local, fsync on)", server.url)
    print(f"{args.runs} concurrent 3-step runs (one tool call per step), {args.backend}:")
    plain = figures[0][1]
    for name, per_s, lag_ms in figures:
        print(
            f"  {name:30} {per_s:9.1f} runs/s   {plain / per_s:5.2f}x the time of no journal"
            f"   loop lag p99 {lag_ms:6.1f} ms"
        )


if __name__ == "__main__":
    main()
