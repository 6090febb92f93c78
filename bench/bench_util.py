"""Small helpers every benchmark process shares: medians, peak RSS, event-loop lag.

Standard library and anyio only, so the peers' benchmark modules can use them too.
"""

from __future__ import annotations

import gc
import json
import resource
import statistics
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

import anyio

__all__ = (
    "OVERLAP_DELAY",
    "OVERLAP_REPEATS",
    "REPEATS",
    "SCALE_REPEATS",
    "SCALE_RUNS",
    "SCALE_STEPS",
    "SEQ_RUNS",
    "SEQ_STEPS",
    "TOOL_RUNS",
    "LagProbe",
    "emit",
    "lag_probe",
    "median",
    "median_async",
    "peak_rss_mb",
)

# The shape of every row, shared by regiment's cases and the peers' so they match.
REPEATS = 7  # medians are over this many measurements, after one warm-up
SEQ_STEPS = 10  # row 2: steps of the sequential plan
SEQ_RUNS = 40  # row 2: back-to-back runs per measurement
TOOL_RUNS = 300  # row 3: one-tool runs per measurement
OVERLAP_DELAY = 0.050  # row 4: seconds each worker model call sleeps
OVERLAP_REPEATS = 5  # row 4: runs per width
SCALE_RUNS = 1_000  # row 5: runs at once
SCALE_STEPS = 5  # row 5: steps per run
SCALE_REPEATS = 3  # row 5: measurements


def median(samples: list[float]) -> float:
    """The median of ``samples`` (which must not be empty)."""
    return statistics.median(samples)


async def median_async(measure: Callable[[], Awaitable[float]], repeats: int) -> float:
    """Median of ``repeats`` calls of ``measure`` after one warm-up call."""
    await measure()
    return median([await measure() for _ in range(repeats)])


def peak_rss_mb() -> float:
    """This process's peak resident set size so far, in MiB (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


@dataclass
class LagProbe:
    """Lateness of a periodic ticker, in seconds per tick (what it measured), and
    the garbage collector's full (generation 2) collections meanwhile, in seconds
    each: a full collection holds the loop for as long as it takes, whoever made
    the garbage, and with ~100 ticks one of them is enough to set the p99.

    ``waits`` keeps each tick's late stretch (from its deadline to its wake-up, on
    ``time.perf_counter``), and ``held`` the stretches the bench's own code held the
    loop (row 5's loop of 1,000 ``start_soon`` calls, one turn), so :meth:`p99_ms_ours`
    can leave out what no framework could avoid."""

    period: float
    lags: list[float] = field(default_factory=list)
    full_collections: list[float] = field(default_factory=list)
    waits: list[tuple[float, float]] = field(default_factory=list)
    held: list[tuple[float, float]] = field(default_factory=list)

    def p99_ms(self) -> float:
        """99th percentile lag in milliseconds (0 without ticks)."""
        return _p99_ms(self.lags)

    def p99_ms_ours(self) -> float:
        """:meth:`p99_ms` with each tick's lag less the part of it the bench's own code
        held the loop (``held``): with ~75 ticks the p99 is the second-latest tick, and
        1,000 ``start_soon`` calls in one turn alone make a tick ~9 ms late."""
        return _p99_ms(
            [
                max(0.0, woke - due - sum(_overlap(due, woke, s, e) for s, e in self.held))
                for due, woke in self.waits
            ]
        )


def _overlap(a: float, b: float, start: float, end: float) -> float:
    return max(0.0, min(b, end) - max(a, start))


def _p99_ms(lags: list[float]) -> float:
    if not lags:
        return 0.0
    ordered = sorted(lags)
    return ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))] * 1e3


@asynccontextmanager
async def lag_probe(period: float = 0.010) -> AsyncIterator[LagProbe]:
    """Run a ticker every ``period`` s in the block and record how late each tick woke."""
    probe = LagProbe(period)

    async def tick() -> None:
        deadline = time.perf_counter() + period
        while True:
            await anyio.sleep(max(0.0, deadline - time.perf_counter()))
            now = time.perf_counter()
            probe.lags.append(max(0.0, now - deadline))
            probe.waits.append((deadline, now))
            deadline = now + period

    began = 0.0

    def collecting(phase: str, info: Mapping[str, int]) -> None:
        nonlocal began
        if info["generation"] != 2:
            return
        if phase == "start":
            began = time.perf_counter()
        else:
            probe.full_collections.append(time.perf_counter() - began)

    gc.callbacks.append(collecting)
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(tick)
            try:
                yield probe
            finally:
                tg.cancel_scope.cancel()
    finally:
        gc.callbacks.remove(collecting)


def emit(figures: Mapping[str, float | str]) -> None:
    """Print one case's figures as the last stdout line, for the table to read."""
    sys.stdout.write(json.dumps(dict(figures)) + "\n")
    sys.stdout.flush()
