"""One benchmark case per process: ``python bench/cases.py NAME`` prints its figures as JSON.

Regiment's cases are here; a peer's are in ``bench/peers/<peer>.py`` (``CASES``),
imported only when asked for, so this file runs in the main virtualenv too. A
fresh process per case keeps one case's imports, garbage and peak RSS out of the
next one's figures.
"""

from __future__ import annotations

import functools
import gc
import importlib
import sys
import time
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager

import anyio
import regiment_cases as rc
from actors_roundtrip import anyio_pair, asyncio_queue_pair, regiment_ask
from bench_util import (
    OVERLAP_DELAY,
    OVERLAP_REPEATS,
    REPEATS,
    SCALE_REPEATS,
    SCALE_RUNS,
    SCALE_STEPS,
    SEQ_RUNS,
    SEQ_STEPS,
    TOOL_RUNS,
    LagProbe,
    emit,
    lag_probe,
    median,
    median_async,
    peak_rss_mb,
)
from opentelemetry.trace import set_span_in_context

__all__ = ("REGIMENT_CASES", "main")

Figures = Mapping[str, float | str]


def roundtrip() -> Figures:
    """Row 1: actor ask vs raw anyio streams vs asyncio.Queue (µs per round trip)."""
    import asyncio

    return {
        "regiment_us": anyio.run(regiment_ask, backend="asyncio"),
        "anyio_us": anyio.run(anyio_pair, backend="asyncio"),
        "queue_us": asyncio.run(asyncio_queue_pair()),
    }


def per_step() -> Figures:
    """Row 2: a 10-step sequential plan, µs per run and per step."""
    team = rc.sequential_team(SEQ_STEPS)

    async def measure() -> float:
        return await rc.sequential_run_s(team, SEQ_RUNS)

    run_s = anyio.run(median_async, measure, REPEATS)
    return {"run_us": run_s * 1e6, "step_us": run_s * 1e6 / SEQ_STEPS}


def per_step_stream() -> Figures:
    """Row 2 read through ``stream(goal)``: µs per step, with ``run(goal)``'s
    measured alternately in the same process (same load) beside it."""
    team = rc.sequential_team(SEQ_STEPS)
    streamed: list[float] = []
    plain: list[float] = []
    for _ in range(REPEATS):
        streamed.append(
            anyio.run(functools.partial(rc.sequential_run_s, streamed=True), team, SEQ_RUNS)
        )
        plain.append(anyio.run(rc.sequential_run_s, team, SEQ_RUNS))
    stream_us, run_us = median(streamed) * 1e6 / SEQ_STEPS, median(plain) * 1e6 / SEQ_STEPS
    return {"stream_step_us": stream_us, "run_step_us": run_us, "ratio": stream_us / run_us}


def per_step_tracing() -> Figures:
    """Row 6: row 2 with tracing off and on, measured alternately in one process so
    both see the same machine load; µs per step. Also the floor: spans per step
    (counted at the exporter) times what one OpenTelemetry SDK span costs through
    the same provider, as a child span with as many attributes as regiment's
    spans carry on average, timed in the same rounds.

    That floor is timed in a tight loop of spans, where the SDK's code and data
    stay in the CPU's caches. A second floor times the same spans made *inside*
    row 2's steps: a third team, tracing off, whose model makes as many bare SDK
    spans per run as the traced team exports (``spans_per_step`` a step on
    average), so they run amid a step's work as regiment's own spans do; the
    spans' cost there is that team's time less the untraced team's."""
    off = rc.sequential_team(SEQ_STEPS)
    telemetry, exporter, provider = rc.tracing()
    on = rc.sequential_team(SEQ_STEPS, telemetry=telemetry)
    anyio.run(rc.sequential_run_s, on, 1)  # one warm-up run and one counted: 2 runs
    provider.force_flush()
    spans_per_step = exporter.spans / (2 * SEQ_STEPS)
    per_span = round(exporter.attributes_per_span())
    attributes = {f"bench.attribute.{i}": f"value {i}" for i in range(per_span)}
    tracer = provider.get_tracer("bench")
    parent = tracer.start_span("invoke_agent bench")
    in_parent = set_span_in_context(parent)
    # the model is called once a step plus twice a run (plan, synthesis)
    spans_per_call = spans_per_step * SEQ_STEPS / (SEQ_STEPS + 2)
    owed = 0.0

    def bare_spans() -> None:
        nonlocal owed
        owed += spans_per_call
        while owed >= 1:
            owed -= 1
            with tracer.start_as_current_span("chat bench", in_parent, attributes=attributes):
                pass

    spanned = rc.sequential_team(SEQ_STEPS, on_call=bare_spans)

    def sdk_span_s(spans: int = 2000) -> float:
        with tracer.start_as_current_span("invoke_agent bench"):
            started = time.perf_counter()
            for _ in range(spans):
                with tracer.start_as_current_span("chat bench", attributes=attributes):
                    pass
            return (time.perf_counter() - started) / spans

    async def measure() -> dict[str, float]:
        samples: dict[str, list[float]] = {"off": [], "on": [], "spanned": [], "span": []}
        for index in range(REPEATS + 1):
            for key, team in (("off", off), ("on", on), ("spanned", spanned)):
                seconds = await rc.sequential_run_s(team, SEQ_RUNS)
                if index:  # the first round is the warm-up
                    samples[key].append(seconds)
            span = sdk_span_s()
            if index:
                samples["span"].append(span)
        return {key: median(values) for key, values in samples.items()}

    seconds = anyio.run(measure)
    parent.end()
    off_step = seconds["off"] * 1e6 / SEQ_STEPS
    return {
        "off_step_us": off_step,
        "on_step_us": seconds["on"] * 1e6 / SEQ_STEPS,
        "sdk_span_us": seconds["span"] * 1e6,
        "spans_per_step": spans_per_step,
        "attributes_per_span": per_span,
        # the same spans made inside the steps: their cost per step there
        "sdk_spans_in_steps_us": seconds["spanned"] * 1e6 / SEQ_STEPS - off_step,
    }


def one_tool() -> Figures:
    """Row 3: a worker step with one tool call (model -> tool -> model), µs per run."""

    async def measure() -> float:
        return await rc.one_tool_worker_run_s(TOOL_RUNS)

    return {"run_us": anyio.run(median_async, measure, REPEATS) * 1e6}


def overlap(steps: int) -> Figures:
    """Row 4: ``steps`` independent steps, each a 50 ms model call: wall ms of the run."""
    samples = [anyio.run(rc.overlap_wall_s, steps, OVERLAP_DELAY) for _ in range(OVERLAP_REPEATS)]
    return {"wall_ms": median(samples) * 1e3, "ideal_ms": OVERLAP_DELAY * 1e3}


def scale(traced: bool = False) -> Figures:
    """Row 5 (and 6): 1,000 concurrent runs of a 5-step plan in one process."""
    telemetry = rc.tracing()[0] if traced else None

    spawns: list[tuple[float, float]] = []

    async def measure(per_turn: int | None, frozen: bool) -> tuple[list[float], LagProbe]:
        probes: list[LagProbe] = []

        @asynccontextmanager
        async def watch() -> AsyncIterator[None]:
            if frozen:  # what `regiment serve` does once started (serve/_serve.py)
                gc.collect()
                gc.freeze()
            try:
                async with lag_probe(0.010) as probe:
                    probes.append(probe)
                    yield
            finally:
                gc.unfreeze()

        times = await rc.scale_runs(
            SCALE_RUNS,
            SCALE_STEPS,
            telemetry,
            repeats=SCALE_REPEATS,
            spawns=None if per_turn else spawns,
            per_turn=per_turn,
            watch=watch,
        )
        return times, probes[0]

    times, probe = anyio.run(measure, None, False)
    probe.held.extend(spawns)  # the bench's own turns, left out of lag_p99_ours_ms
    peak = peak_rss_mb()
    _, arriving = anyio.run(measure, ARRIVING_PER_TURN, False)
    frozen_times, frozen = anyio.run(measure, ARRIVING_PER_TURN, True)
    return {
        "runs_per_s": SCALE_RUNS / median(times),
        "peak_rss_mb": peak,
        "lag_p99_ms": probe.p99_ms(),
        # the same ticks, each less the part of its lag the bench's own start_soon loop
        # held the loop: what the runs themselves made (the target's figure since perf31)
        "lag_p99_ours_ms": probe.p99_ms_ours(),
        # the bench's own 1,000 start_soon calls, one loop turn: the lag probe's floor
        "spawn_turn_ms": median([end - start for start, end in spawns]) * 1000,
        # the same burst, its callers arriving ARRIVING_PER_TURN per loop turn
        "arriving_lag_p99_ms": arriving.p99_ms(),
        # the garbage collector's full collections during the bursts (both ways of
        # arriving): each holds the loop as long as it takes
        "full_collections": len(probe.full_collections) + len(arriving.full_collections),
        "full_collection_max_ms": max(probe.full_collections + arriving.full_collections, default=0)
        * 1000,
        # arriving again, the heap frozen before the bursts (gc.freeze(), as a served
        # team's is): full collections skip the modules and the started team
        "frozen_arriving_lag_p99_ms": frozen.p99_ms(),
        "frozen_arriving_runs_per_s": SCALE_RUNS / median(frozen_times),
        "frozen_full_collection_max_ms": max(frozen.full_collections, default=0) * 1000,
    }


ARRIVING_PER_TURN = 100


def floor() -> Figures:
    """Row 2's floor: planner -> runner -> planner over bare mailboxes, no regiment logic (floor.py)."""
    import floor as hops

    samples = [anyio.run(hops.per_step_us, False) for _ in range(REPEATS)]
    return {"step_us": median(samples)}


def service() -> Figures:
    """Row 9: ``regiment serve``'s ``POST /runs?wait=true`` beside a bare endpoint (serve.py)."""
    import serve

    return anyio.run(serve.measure)


def tracing_share() -> Figures:
    """Row 6 in bytecodes (tracing_share.py): regiment's part of what a traced step adds."""
    import tracing_share as share

    groups, _ = share.share()
    ours = groups["regiment"]
    return {"ours": ours, "others": sum(groups.values()) - ours}


REGIMENT_CASES: dict[str, Callable[[], Figures]] = {
    "roundtrip": roundtrip,
    "floor": floor,
    "per_step": per_step,
    "per_step.tracing": per_step_tracing,
    "tracing_share": tracing_share,
    "per_step.stream": per_step_stream,
    "one_tool": one_tool,
    "overlap.10": lambda: overlap(10),
    "overlap.100": lambda: overlap(100),
    "scale": scale,
    "scale.traced": lambda: scale(traced=True),
    "service": service,
}


def main(argv: list[str]) -> None:
    """Run the case named ``framework.case`` and print its figures."""
    if len(argv) != 1 or "." not in argv[0]:
        raise SystemExit("usage: cases.py FRAMEWORK.CASE, e.g. regiment.per_step")
    framework, case = argv[0].split(".", 1)
    if framework == "regiment":
        cases: Mapping[str, Callable[[], Figures]] = REGIMENT_CASES
    else:
        cases = importlib.import_module(f"peers.{framework}_cases").CASES
    emit(cases[case]())


if __name__ == "__main__":
    main(sys.argv[1:])
