"""Where row 4's 100-way overlap spends its wall time: one run's timeline.

    .venv/bin/python bench/overlap_timeline.py            # 100 steps, 7 runs
    .venv/bin/python bench/overlap_timeline.py --steps 10
    .venv/bin/python bench/overlap_timeline.py --calls    # Python calls a step, by phase
    .venv/bin/python bench/overlap_timeline.py --gc-off   # the collector held off in each timed run
    .venv/bin/python bench/overlap_timeline.py --census   # tracked objects a step, by kind

The row 4 shape (independent steps whose worker model call sleeps 50 ms, the
planner and synthesizer instant) with the model noting, on the run's clock,
when the plan is answered, when each worker call starts and when its sleep
ends, and when the synthesis is asked for. Printed per run, in ms from the
run's start, then the medians:

- ``plan``: the plan reply; ``calls``: the first and the last worker call to
  start (the dispatch of every step lies between the plan and the last);
- ``ends``: the first and the last sleep to end;
- ``late``: how much later than 50 ms the latest sleep ended (the event loop
  was busy with other steps' reports, or rounded its wait to the millisecond);
- ``synth`` and ``end``: the synthesis call and the run's return;
- ``gc`` and ``gc ms``: the garbage collections that ran inside the timed run and the
  time they took (each one stops the loop: all of it lands on the run's wall unless
  it falls in the 50 ms every step sleeps).

``--calls`` counts instead (``sys.setprofile``, exact) the Python calls per step in
the dispatch (from the plan reply to the last worker call's start) and in the ends
(from the first sleep's end to the synthesis), regiment's by function; and, the
collector held off, the objects it tracks that the run has made and still holds a
step as the last worker call starts (what makes the collections: the collector runs
each time 700 more are alive than at its last run).

``--gc-off`` holds the collector off in each timed run (regiment's and raw), to read
the wall with no collection in it.

``--census`` lists those objects instead (one run, the collector held off, ``tracemalloc``
on): a step's share of each kind, and where the most of each were made (the innermost
lines of regiment's, or of the bench, that made them).

Beside it, the same sleeps in bare anyio tasks (``raw``: 100 tasks started at
once, each sleeping 50 ms; no framework at all), with the same columns, each raw
run right after a regiment run so both see the same machine, and the difference
of the medians.
"""

from __future__ import annotations

import argparse
import collections
import gc
import statistics
import sys
import time
import tracemalloc
import types
from types import FrameType
from typing import Any

import anyio
import regiment_cases as rc

from regiment.hierarchy import Planner, Team, Worker
from regiment.models import ModelRequest, ModelResponse, ScriptedModel, Usage, text_response

DELAY = 0.05
_USAGE = Usage(input_tokens=10, output_tokens=5)


class Timeline:
    """What the model saw of one run, on ``time.perf_counter``."""

    def __init__(self, steps: int) -> None:
        self.steps = steps
        self.plan = self.synth = 0.0
        self.starts: list[float] = []
        self.ends: list[float] = []
        self.phase = ""  # for --calls: "dispatch", "ends" or "" (neither)
        self.alive = 0  # for --calls: tracked objects made and alive at the last call's start
        self.census: list[object] | None = None  # for --census: those objects, if asked for

    def clear(self) -> None:
        """Forget the warm-up run."""
        self.starts.clear()
        self.ends.clear()


def team(steps: int, line: Timeline) -> Team:
    planned = text_response(rc.plan_reply(steps, sequential=False), usage=_USAGE)
    worked = text_response("done", usage=_USAGE)
    answered = text_response("answer", usage=_USAGE)

    async def brain(request: ModelRequest) -> ModelResponse:
        if request.role == "worker":
            line.starts.append(time.perf_counter())
            if len(line.starts) == line.steps:
                line.phase = ""  # the last call began: the dispatch is over
                line.alive = gc.get_count()[0]
                if line.census is not None:
                    line.census = gc.get_objects(0)
            await anyio.sleep(DELAY)
            line.ends.append(time.perf_counter())
            if len(line.ends) == 1:
                line.phase = "ends"
            return worked
        if request.role == "planner":
            line.plan = time.perf_counter()
            line.phase = "dispatch"
            return planned
        line.synth = time.perf_counter()
        line.phase = ""
        return answered

    model = ScriptedModel(brain, name="bench")
    worker = Worker(
        name="w",
        description="does any step",
        model=model,
        tools=[rc.noop],
        max_iterations=4,
        max_concurrent_steps=steps,
    )
    planner = Planner(model=model, max_steps=max(steps, 10))
    return Team(name="bench", planner=planner, workers=[worker], concurrency=steps)


class Collections:
    """The garbage collections while it is entered (``with``), with their durations;
    ``off``: the collector held off meanwhile instead."""

    def __init__(self, off: bool) -> None:
        self.off = off
        self.took: list[float] = []
        self._began = 0.0

    def _note(self, phase: str, _: dict[str, int]) -> None:
        if phase == "start":
            self._began = time.perf_counter()
        else:
            self.took.append(time.perf_counter() - self._began)

    def __enter__(self) -> None:
        if self.off:
            gc.disable()
        gc.callbacks.append(self._note)

    def __exit__(self, *_: object) -> None:
        gc.callbacks.remove(self._note)
        if self.off:
            gc.enable()

    def columns(self) -> dict[str, float]:
        return {"gc": len(self.took), "gc ms": sum(self.took) * 1e3}


async def one_run(steps: int, gc_off: bool = False) -> dict[str, float]:
    line = Timeline(steps)
    collections_ = Collections(gc_off)
    async with team(steps, line).start() as running:
        await running.run("warm up")
        line.clear()
        with collections_:
            start = time.perf_counter()
            result = await running.run("do the steps at once")
            end = time.perf_counter()
    assert result.status == "completed", result.status

    def ms(t: float) -> float:
        return (t - start) * 1e3

    late = max(e - s for s, e in zip(line.starts, line.ends, strict=True)) - DELAY
    return {
        "plan": ms(line.plan),
        "first call": ms(line.starts[0]),
        "last call": ms(line.starts[-1]),
        "first end": ms(min(line.ends)),
        "last end": ms(max(line.ends)),
        "late": late * 1e3,
        "synth": ms(line.synth),
        "end": ms(end),
    } | collections_.columns()


async def raw_run(steps: int, gc_off: bool = False) -> dict[str, float]:
    """The same sleeps in bare anyio tasks, timed as a run's are: from the start of the
    loop that starts them to the task group's end."""
    starts: list[float] = []
    ends: list[float] = []

    async def one() -> None:
        starts.append(time.perf_counter())
        await anyio.sleep(DELAY)
        ends.append(time.perf_counter())

    collections_ = Collections(gc_off)
    with collections_:
        start = time.perf_counter()
        async with anyio.create_task_group() as tg:
            for _ in range(steps):
                tg.start_soon(one)
        end = time.perf_counter()

    def ms(t: float) -> float:
        return (t - start) * 1e3

    late = max(e - s for s, e in zip(starts, ends, strict=True)) - DELAY
    return {
        "first call": ms(starts[0]),
        "last call": ms(starts[-1]),
        "first end": ms(min(ends)),
        "last end": ms(max(ends)),
        "late": late * 1e3,
        "end": ms(end),
    } | collections_.columns()


def show(title: str, rows: list[dict[str, float]]) -> dict[str, float]:
    keys = list(rows[0])
    print(title)
    print("       " + "".join(f"{k:>11}" for k in keys))
    for i, row in enumerate(rows, 1):
        print(f"run {i:<3}" + "".join(f"{row[k]:11.2f}" for k in keys))
    medians = {k: statistics.median(r[k] for r in rows) for k in keys}
    print("median " + "".join(f"{medians[k]:11.2f}" for k in keys))
    return medians


async def main(steps: int, runs: int, gc_off: bool) -> None:
    rows: list[dict[str, float]] = []
    raw: list[dict[str, float]] = []
    for _ in range(runs):  # alternating, so both see the same machine
        rows.append(await one_run(steps, gc_off))
        raw.append(await raw_run(steps, gc_off))
    ours = show(f"{steps} independent steps of {DELAY * 1e3:.0f} ms, ms from the run's start", rows)
    bare = show(f"raw anyio: {steps} tasks sleeping {DELAY * 1e3:.0f} ms, the same columns", raw)
    print(
        f"end: regiment {ours['end']:.2f} ms, raw anyio {bare['end']:.2f} ms "
        f"({ours['end'] - bare['end']:+.2f} ms); the last call began {ours['last call']:.2f} "
        f"against {bare['last call']:.2f} ms, the last sleep ended {ours['late']:.2f} "
        f"against {bare['late']:.2f} ms late" + ("; the collector held off" if gc_off else "")
    )


async def calls(steps: int) -> None:
    """``--calls``: one run's Python calls per step, in the dispatch and in the ends."""
    line = Timeline(steps)
    counts: collections.Counter[tuple[str, str]] = collections.Counter()
    ours = "/regiment/"

    def profile(frame: FrameType, event: str, _: Any) -> None:
        if event == "call" and line.phase:
            code = frame.f_code
            path = code.co_filename
            name = code.co_qualname if ours in path else "(not regiment's)"
            counts[line.phase, name] += 1

    async with team(steps, line).start() as running:
        await running.run("warm up")
        line.clear()
        line.phase = ""
        sys.setprofile(profile)
        try:
            await running.run("do the steps at once")
        finally:
            sys.setprofile(None)
        line.clear()
        gc.collect()
        gc.disable()  # (so the count is what the run holds, not what was left since)
        try:
            await running.run("do the steps at once")  # not profiled: its own objects only
        finally:
            gc.enable()
    for phase in ("dispatch", "ends"):
        rows = {name: n / steps for (p, name), n in counts.items() if p == phase}
        total = sum(rows.values())
        own = total - rows.get("(not regiment's)", 0.0)
        print(f"{phase}: {total:.1f} Python calls a step, regiment's {own:.1f}")
        for name, n in sorted(rows.items(), key=lambda kv: -kv[1]):
            if n >= 0.5:
                print(f"  {n:6.2f}  {name}")
    print(
        f"objects the collector tracks, made by the run and alive as the last call starts: "
        f"{line.alive / steps:.2f} a step (bench model's included)"
    )


def _kind(obj: object) -> str:
    """What a tracked object is, with the function of a coroutine or a bound method."""
    if isinstance(obj, types.CoroutineType):
        return f"coroutine {obj.cr_code.co_qualname}"
    if isinstance(obj, types.MethodType):
        return f"bound method {obj.__func__.__qualname__}"
    if isinstance(obj, tuple):
        return f"tuple of {len(obj)}"
    return type(obj).__qualname__


def _made_at(obj: object) -> str:
    """The innermost two lines of regiment's or the bench's code that made ``obj``."""
    traceback = tracemalloc.get_object_traceback(obj)
    if traceback is None:
        return "(not traced)"
    ours = [f for f in reversed(traceback) if "/regiment/" in f.filename or "bench" in f.filename]
    where = ours[:2] if ours else list(reversed(traceback))[:1]
    return " < ".join(
        f"{f.filename.rsplit('/', 2)[-2]}/{f.filename.rsplit('/', 1)[-1]}:{f.lineno}" for f in where
    )


async def census(steps: int) -> None:
    """``--census``: the tracked objects a run holds as its last worker call starts, by kind."""
    line = Timeline(steps)
    tracemalloc.start(30)
    async with team(steps, line).start() as running:
        await running.run("warm up")
        line.clear()
        line.census = []
        gc.collect()
        gc.disable()
        try:
            await running.run("do the steps at once")
        finally:
            gc.enable()
    found = line.census or []
    kinds = collections.Counter(_kind(o) for o in found)
    print(f"{len(found) / steps:.2f} tracked objects a step, alive as the last call starts:")
    for kind, n in kinds.most_common():
        if n >= steps / 2:
            made = collections.Counter(_made_at(o) for o in found if _kind(o) == kind)
            at, m = made.most_common(1)[0]
            print(f"  {n / steps:5.2f}  {kind:<30} {m / steps:5.2f} made at {at}")
    tracemalloc.stop()  # (after: it forgets where each object was made)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--calls", action="store_true", help="Python calls a step, by phase")
    parser.add_argument("--gc-off", action="store_true", help="no collection in a timed run")
    parser.add_argument("--census", action="store_true", help="tracked objects a step, by kind")
    args = parser.parse_args()
    if args.census:
        anyio.run(census, args.steps)
    elif args.calls:
        anyio.run(calls, args.steps)
    else:
        anyio.run(main, args.steps, args.runs, args.gc_off)
