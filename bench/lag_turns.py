"""Row 5's loop lag, turn by turn: which event-loop turns ran over 5 ms, and what each was.

    .venv/bin/python bench/lag_turns.py                  # callers arriving 100 per turn
    .venv/bin/python bench/lag_turns.py --all-at-once    # the bench's 1,000 start_soon in one turn
    .venv/bin/python bench/lag_turns.py --frozen         # arriving, heap frozen as `regiment serve` does

Runs row 5's bursts (``regiment_cases.scale_runs``, three of 1,000 5-step runs on one
started team, asyncio) with the same 10 ms lag probe as ``cases.py regiment.scale``, and
times every turn of the loop (``BaseEventLoop._run_once``, the callbacks only, not the
wait in ``select``). Each turn over 5 ms is put down to what it was:

* ``full collection``: the garbage collector's generation 2 ran in it (its ms given);
* ``descheduled``: the process got the CPU for less than half of the turn's wall time
  (``time.thread_time``): another process had the core, nothing regiment did;
* otherwise the code the turn spent its time in: a 1 ms ``SIGALRM`` sampler records the
  innermost frame in ``regiment/`` or ``bench/`` (``all_at_once`` is the bench's own loop
  of ``start_soon`` calls), and a turn of several hundred callbacks is a burst's callers
  each taking their first step.

Instrumentation costs wall time (the sampler, a timer per callback), so runs/s and lag
figures here read higher than ``cases.py``'s; the attribution is what this is for.
"""

from __future__ import annotations

import asyncio
import asyncio.base_events
import asyncio.events
import collections
import gc
import signal
import sys
import time
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from types import FrameType

import anyio
import regiment_cases as rc
from bench_util import SCALE_REPEATS, SCALE_RUNS, SCALE_STEPS, lag_probe

LONG = 0.005  # a turn over this is reported


@dataclass
class Turn:
    wall: float
    cpu: float
    callbacks: int
    full_gc: float  # seconds of generation 2 collections in the turn
    samples: list[str] = field(default_factory=list)

    def kind(self) -> str:
        if self.full_gc:
            return f"full collection ({self.full_gc * 1e3:.1f} ms of it)"
        if self.cpu < self.wall / 2:
            return f"descheduled (CPU {self.cpu * 1e3:.1f} ms of it)"
        where = collections.Counter(self.samples).most_common(1)
        place = where[0][0] if where else "no sample"
        if self.callbacks >= 300:
            return f"{self.callbacks} callbacks, a burst's first steps ({place})"
        return place


@dataclass
class Recorder:
    on: bool = False
    turns: list[Turn] = field(default_factory=list)
    full: list[float] = field(default_factory=list)
    collections: collections.Counter[int] = field(default_factory=collections.Counter)
    current: Turn | None = None
    in_callback: bool = False
    began: float = 0.0

    def collecting(self, phase: str, info: Mapping[str, int]) -> None:
        if not self.on:
            return
        if phase == "start":
            self.collections[info["generation"]] += 1
            self.began = time.perf_counter()
        elif info["generation"] == 2:
            spent = time.perf_counter() - self.began
            self.full.append(spent)
            if self.current is not None:
                self.current.full_gc += spent
                if not self.in_callback:  # in the loop's own code: not in a callback's time
                    self.current.wall += spent
                    self.current.cpu += spent

    def sample(self, signum: int, frame: FrameType | None) -> None:
        turn = self.current
        while turn is not None and frame is not None:
            path = frame.f_code.co_filename
            if "/regiment/" in path and "lag_turns" not in path:
                place = "/".join(path.rsplit("/", 2)[-2:])
                turn.samples.append(f"{frame.f_code.co_name} ({place})")
                return
            frame = frame.f_back


def instrument(recorder: Recorder) -> None:
    """Time each loop turn and count its callbacks (asyncio's pure-Python loop methods)."""
    run_once = asyncio.base_events.BaseEventLoop._run_once  # type: ignore[attr-defined]
    handle_run = asyncio.events.Handle._run

    def timed_run_once(loop: asyncio.AbstractEventLoop) -> None:
        # Every turn is timed: the one that turns the recorder on is the first burst's.
        recorder.current = turn = Turn(0.0, 0.0, 0, 0.0)
        run_once(loop)
        recorder.current = None
        if turn.callbacks and recorder.on:
            recorder.turns.append(turn)

    def timed_handle(handle: asyncio.Handle) -> None:
        turn = recorder.current
        if turn is None:  # a callback run outside _run_once
            handle_run(handle)
            return
        wall, cpu = time.perf_counter(), time.thread_time()
        recorder.in_callback = True
        try:
            handle_run(handle)
        finally:
            recorder.in_callback = False
            turn.wall += time.perf_counter() - wall
            turn.cpu += time.thread_time() - cpu
            turn.callbacks += 1

    asyncio.base_events.BaseEventLoop._run_once = timed_run_once  # type: ignore[attr-defined]
    asyncio.events.Handle._run = timed_handle  # type: ignore[method-assign,assignment]
    gc.callbacks.append(recorder.collecting)
    signal.signal(signal.SIGALRM, recorder.sample)
    signal.setitimer(signal.ITIMER_REAL, 0.001, 0.001)


async def measure(
    recorder: Recorder, per_turn: int | None, frozen: bool
) -> tuple[list[float], tuple[float, float], int]:
    probes = []

    @asynccontextmanager
    async def watch() -> AsyncIterator[None]:
        if frozen:
            gc.collect()
            gc.freeze()
        recorder.on = True
        try:
            async with lag_probe(0.010) as probe:
                probes.append(probe)
                yield
        finally:
            recorder.on = False
            gc.unfreeze()

    held: list[tuple[float, float]] = []  # the bench's own start_soon turns (all at once)
    times = await rc.scale_runs(
        SCALE_RUNS, SCALE_STEPS, repeats=SCALE_REPEATS, per_turn=per_turn, watch=watch,
        spawns=None if per_turn else held,
    )  # fmt: skip
    probe = probes[0]
    probe.held.extend(held)
    return times, (probe.p99_ms(), probe.p99_ms_ours()), sum(lag > LONG for lag in probe.lags)


def main() -> None:
    per_turn = None if "--all-at-once" in sys.argv else 100
    frozen = "--frozen" in sys.argv
    recorder = Recorder()
    instrument(recorder)
    times, p99, late = anyio.run(measure, recorder, per_turn, frozen)
    signal.setitimer(signal.ITIMER_REAL, 0, 0)
    shape = "all at once" if per_turn is None else f"arriving {per_turn} per turn"
    print(
        f"row 5, {shape}{', heap frozen' if frozen else ''}: "
        f"runs/s {', '.join(f'{SCALE_RUNS / t:,.0f}' for t in times)}; "
        f"lag p99 {p99[1]:.1f} ms with the bench's own start_soon turns left out "
        f"({p99[0]:.1f} ms with them), {late} ticks over {LONG * 1e3:.0f} ms"
    )
    gens = recorder.collections
    print(
        f"collections gen0/1/2: {gens[0]}/{gens[1]}/{gens[2]}; full ones "
        f"{', '.join(f'{s * 1e3:.1f}' for s in recorder.full) or 'none'} ms"
    )
    walls = sorted(t.wall for t in recorder.turns)
    long = [t for t in recorder.turns if t.wall > LONG]
    print(
        f"{len(walls)} turns, median {walls[len(walls) // 2] * 1e3:.2f} ms, "
        f"p99 {walls[int(0.99 * (len(walls) - 1))] * 1e3:.2f} ms; over {LONG * 1e3:.0f} ms: {len(long)}"
    )
    for turn in sorted(long, key=lambda t: -t.wall):
        print(f"  {turn.wall * 1e3:5.1f} ms, {turn.callbacks:4d} callbacks: {turn.kind()}")


if __name__ == "__main__":
    main()
