"""Per-step cost of a run journaled to SQLite vs. the same run with no journal.

``.venv/bin/python bench/journaled_step.py [--backend trio]`` runs a 10-step
sequential plan back to back on one started team (the scripted model answers
instantly), once with ``Team.start()`` and once with
``Team.start(journal=<temp file>)``, and prints the median µs per step of each
and their ratio (issue #16's target: at most 2x); then journaled again under a budget
that limits tokens (never reached), where each model call's intent is written durably
before the call (an fsync on SQLite: README, Money, "A call in flight at a crash").
"""

from __future__ import annotations

import argparse
import dataclasses
import tempfile
import time
from pathlib import Path

import anyio
import regiment_cases as rc
from bench_util import REPEATS, SEQ_RUNS, SEQ_STEPS, median_async

from regiment.hierarchy import Budget, Team

__all__ = ("main",)


async def _run_s(team: Team, runs: int, journal: Path | None) -> float:
    async with team.start(journal=journal) as running:
        await running.run("warm up")
        start = time.perf_counter()
        for _ in range(runs):
            result = await running.run("do the steps")
            assert result.status == "completed", result.status
        return (time.perf_counter() - start) / runs


def per_step_us(backend: str, journal: Path | None, *, budgeted: bool = False) -> float:
    """Median µs per step of a SEQ_STEPS-step run (``budgeted``: under a tokens budget)."""
    team = rc.sequential_team(SEQ_STEPS)
    if budgeted:
        team = dataclasses.replace(team, budget=Budget(tokens=10**12))

    async def measure() -> float:
        return await _run_s(team, SEQ_RUNS, journal)

    return anyio.run(median_async, measure, REPEATS, backend=backend) * 1e6 / SEQ_STEPS


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--backend", choices=("asyncio", "trio"), default="asyncio")
    args = parser.parse_args()
    plain = per_step_us(args.backend, None)
    with tempfile.TemporaryDirectory() as tmp:
        journaled = per_step_us(args.backend, Path(tmp) / "runs.db")
        budgeted = per_step_us(args.backend, Path(tmp) / "budgeted.db", budgeted=True)
    print(f"backend {args.backend}, {SEQ_STEPS}-step runs, median µs per step")
    print(f"  no journal      {plain:8.1f}")
    print(f"  SQLite journal  {journaled:8.1f}   ({journaled / plain:.2f}x)")
    print(f"  and a budget    {budgeted:8.1f}   ({budgeted / plain:.2f}x; tokens limited)")


if __name__ == "__main__":
    main()
