"""Regiment's orchestration overhead per step, in the main virtualenv (no peers needed).

``.venv/bin/python bench/per_step.py`` runs a 10-step sequential plan on one
started team, back to back: one planner call, 10 steps (each = dispatch + one
worker model call + report + commit), one synthesis call. The scripted model
answers instantly and the worker's only tool is a no-op, so everything timed is
regiment's own work. It prints the median µs per run, per step (run / 10), and
the marginal cost of one more step ((20-step run - 10-step run) / 10), which
leaves the plan and synthesis calls out.

``--profile`` adds a cProfile of the 10-step runs: the regiment functions with
the most cumulative time, in µs per step (cProfile's own overhead inflates
every figure by the factor it prints; compare them with each other).
It then splits the profiled time into parts (actor hops, event construction,
the budget ledger, plan-version checks, span bookkeeping, message copying, ...;
see ``bench/parts.py``). ``--backend trio`` runs on trio instead of asyncio.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import sys
import time
from pathlib import Path

import anyio
import regiment_cases as rc
from bench_util import REPEATS, SEQ_RUNS, SEQ_STEPS, median_async
from parts import by_part

import regiment

__all__ = ("main", "per_run_us")

TARGET_US = 60.0
PACKAGE = str(Path(regiment.__file__).resolve().parent)
BENCH = str(Path(__file__).resolve().parent)


def per_run_us(steps: int, backend: str) -> float:
    """Median µs per run of a ``steps``-step sequential plan."""
    team = rc.sequential_team(steps)

    async def measure() -> float:
        return await rc.sequential_run_s(team, SEQ_RUNS)

    return anyio.run(median_async, measure, REPEATS, backend=backend) * 1e6


def profile(backend: str, top: int) -> None:
    """Print the regiment functions with the most cumulative time, in µs per step."""
    team = rc.sequential_team(SEQ_STEPS)
    runs = SEQ_RUNS * 2
    anyio.run(rc.sequential_run_s, team, 5, backend=backend)  # warm up
    started = time.perf_counter()
    anyio.run(rc.sequential_run_s, team, runs, backend=backend)
    plain = time.perf_counter() - started
    profiler = cProfile.Profile()
    started = time.perf_counter()
    profiler.enable()
    anyio.run(rc.sequential_run_s, team, runs, backend=backend)
    profiler.disable()
    profiled = time.perf_counter() - started
    steps = (runs + 1) * SEQ_STEPS  # sequential_run_s does one warm-up run too
    print(
        f"\ncProfile, {runs} runs of {SEQ_STEPS} steps; profiling slows it {profiled / plain:.1f}x;"
        " cumulative µs per step (a coroutine's time counts from each resume):"
    )
    stats = pstats.Stats(profiler)
    rows = []
    for (path, line, name), entry in stats.stats.items():  # type: ignore[attr-defined]
        cumulative = entry[3]
        if path.startswith(PACKAGE) and not path.startswith(BENCH) and "-packages/" not in path:
            rows.append((cumulative, entry[1], f"{_short(path)}:{line}({name})"))
    for cumulative, calls, where in sorted(rows, reverse=True)[:top]:
        print(f"  {cumulative / steps * 1e6:9.1f} µs  {calls / steps:6.2f} calls  {where}")
    parts = by_part(stats)
    whole = sum(parts.values())
    print("\nown time by part (built-ins charged to their callers), µs per step under cProfile:")
    for part, seconds in parts.most_common():
        print(f"  {seconds / steps * 1e6:9.1f} µs  {seconds / whole:6.1%}  {part}")


def _short(path: str) -> str:
    parts = path.replace("\\", "/").split("/")
    return "/".join(parts[-2:])


def main(argv: list[str]) -> None:
    """Measure and print; profile if asked."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--profile", action="store_true", help="add a cProfile breakdown")
    parser.add_argument("--backend", default="asyncio", choices=("asyncio", "trio"))
    parser.add_argument("--top", type=int, default=30, help="functions in the profile")
    args = parser.parse_args(argv)
    ten = per_run_us(SEQ_STEPS, args.backend)
    twenty = per_run_us(2 * SEQ_STEPS, args.backend)
    step = ten / SEQ_STEPS
    marginal = (twenty - ten) / SEQ_STEPS
    verdict = "met" if step <= TARGET_US else "MISSED"
    print(f"regiment per-step overhead ({args.backend}, median of {REPEATS} x {SEQ_RUNS} runs)")
    print(f"  10-step run             {ten:9.1f} µs")
    print(f"  per step (run / 10)     {step:9.1f} µs   target ≤ {TARGET_US:.0f} µs: {verdict}")
    print(f"  marginal step (20 - 10) {marginal:9.1f} µs")
    if args.profile:
        profile(args.backend, args.top)


if __name__ == "__main__":
    main(sys.argv[1:])
