"""Row 2 counted in CPU instructions instead of seconds, so it repeats exactly.

Wall-clock figures on a shared 2-core machine move by up to 2x between runs;
an instruction count does not (valgrind's callgrind counts what the CPU was
asked to execute, whatever else the machine is doing). For each framework it
runs the row 2 shape (a 10-step sequential plan, instant model) under
callgrind twice, once with no timed runs and once with ``RUNS`` of them, and
prints the difference per step. Both processes do the same imports, setup
and warm-up, so only the runs themselves are left.

    bench/.venv-peers/bin/python bench/instructions.py   # regiment and LangGraph
    .venv/bin/python bench/instructions.py               # regiment only
    .venv/bin/python bench/instructions.py --stream      # and regiment's stream(goal)
    .venv/bin/python bench/instructions.py --full-speed  # and with no loop turn a step
    .venv/bin/python bench/instructions.py --runs 10     # quicker: fewer runs, same figure
    .venv/bin/python bench/instructions.py --case one-tool   # row 3: a one-tool worker run
    .venv/bin/python bench/instructions.py --run         # a whole 1-step run, start to result
    .venv/bin/python bench/instructions.py --scale       # row 5: per run of 1,000 at once

The two processes of a case run at the same time (one per core).

``--stream`` adds ``regiment-stream``: the same runs read through
``running.stream(goal)``, so every model call streams its text as
``TextDelta`` events (the scripted model's default 32-character pieces) and
every event reaches the reader; its ratio is what streaming costs per step.

``--full-speed`` adds ``regiment-full-speed``: the same runs with the worker's
``HOLD`` out of reach. A runner yields to the loop once it has run steps for
``HOLD`` (1 ms) without waiting: at full speed once per ~30 steps, but under
callgrind every step outlasts 1 ms, so the default figure pays a whole loop turn
each step (20-24k instructions, the twenty-fifth round) that a step at full speed
shares with ~30 others. Its difference from ``regiment`` is that turn.

``--case one-tool`` counts row 3 instead: one step of a lone worker actor
(model -> no-op tool -> model, assigned by a driver actor and reported back),
``ONE_TOOL_RUNS`` of them against none, per run. Both processes freeze the
garbage collector's heap after the first step (``gc.freeze()``), so a full
collection that lands in one process only cannot swing the difference.

Every case runs with ``PYTHONHASHSEED=0``, so the same tree counts the same
every time (string hashing's random seed moved row 2 by up to ~10k per step).

``--run`` counts a whole run of a 1-step plan (run open, planner actor,
plan call, the step, synthesis, result, teardown), per run: what every run
pays whatever its length. ``--scale`` counts row 5's shape, a burst of
``SCALE_RUNS`` concurrent 5-step runs on one started team, per run.

It needs ``valgrind`` on the PATH and takes about two minutes per framework.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import gc
import importlib.util
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import anyio
import regiment_cases as rc
from bench_util import SCALE_RUNS, SCALE_STEPS, SEQ_STEPS

from regiment.hierarchy import RunCompleted

__all__ = ("main",)

RUNS = 30
ONE_TOOL_RUNS = 300
WARM_UP = 3
# The attributes one span of a traced run carries on average (row 6 counts them at the exporter).
SPAN_ATTRIBUTES = 10
_COLLECTED = re.compile(r"Collected\s*:\s*(\d+)")


def _run_regiment(runs: int, *, traced: bool = False) -> None:
    team = rc.sequential_team(SEQ_STEPS, telemetry=rc.tracing(exact=True)[0] if traced else None)

    async def go() -> None:
        async with team.start() as running:
            for _ in range(WARM_UP + runs):
                result = await running.run("do the steps")
                assert result.status == "completed", result.status

    anyio.run(go)


def _run_full_speed(runs: int) -> None:
    """``_run_regiment`` with the runner never yielding for ``HOLD`` (see ``--full-speed``)."""
    import regiment.hierarchy.workers._step_actor as step_actor

    vars(step_actor)["HOLD"] = 1e9  # as bench/step_census.py does by default
    _run_regiment(runs)


def _run_one_step(runs: int) -> None:
    team = rc.sequential_team(1)

    async def go() -> None:
        async with team.start() as running:
            for _ in range(WARM_UP + runs):
                result = await running.run("do the step")
                assert result.status == "completed", result.status

    anyio.run(go)


def _scale_bursts(bursts: int) -> None:
    """Row 5: after a warm-up burst, ``bursts`` bursts of ``SCALE_RUNS`` runs at once."""

    async def go() -> None:
        team = rc.sequential_team(SCALE_STEPS, concurrency=8, recorded=False)
        async with team.start() as running:
            await running.run("warm up")
            for _ in range(1 + bursts):
                await rc.all_at_once(running, SCALE_RUNS)

    anyio.run(go)


def _run_regiment_stream(runs: int) -> None:
    team = rc.sequential_team(SEQ_STEPS)

    async def go() -> None:
        async with team.start() as running:
            last: object = None
            for _ in range(WARM_UP + runs):
                async with running.stream("do the steps") as events:
                    async for event in events:
                        last = event
                assert isinstance(last, RunCompleted), last

    anyio.run(go)


def _run_one_tool(runs: int) -> None:
    anyio.run(functools.partial(rc.one_tool_worker_run_s, runs, warmed=gc.freeze))


def _sdk_spans(runs: int) -> None:
    """Row 6's floor: ``SEQ_STEPS`` SDK spans per run, each a child span with
    ``SPAN_ATTRIBUTES`` attributes, through the provider a traced team uses (its span
    processor a simple one, exporting in this thread: an exact count, as the team's)."""
    provider = rc.tracing(exact=True)[2]
    tracer = provider.get_tracer("bench")
    attributes = {f"bench.attribute.{i}": f"value {i}" for i in range(SPAN_ATTRIBUTES)}
    with tracer.start_as_current_span("invoke_agent bench"):
        for _ in range((WARM_UP + runs) * SEQ_STEPS):
            with tracer.start_as_current_span("chat bench", attributes=attributes):
                pass


def _run_langgraph(runs: int) -> None:
    from peers.langgraph_cases import sequential_graph

    graph = sequential_graph(SEQ_STEPS)

    async def go() -> None:
        for _ in range(WARM_UP + runs):
            state = await graph.ainvoke({"goal": "do the steps"})
            assert len(state["outputs"]) == SEQ_STEPS

    asyncio.run(go())


_CASES: dict[str, Callable[[int], None]] = {
    "regiment": _run_regiment,
    "regiment-stream": _run_regiment_stream,
    "regiment-traced": functools.partial(_run_regiment, traced=True),
    "regiment-full-speed": _run_full_speed,
    "one-tool": _run_one_tool,
    "sdk-span": _sdk_spans,
    "run": _run_one_step,
    "scale": _scale_bursts,
    "langgraph": _run_langgraph,
}


def _instructions(case: str, runs: int) -> int:
    """Instructions the whole process executed, as callgrind counts them."""
    done = subprocess.run(
        [
            "valgrind",
            "--tool=callgrind",
            "--callgrind-out-file=/dev/null",
            sys.executable,
            __file__,
            "--child",
            case,
            str(runs),
        ],
        capture_output=True,
        text=True,
        check=True,
        # String hashing's random seed moves a count by up to ~10k per step: fix it.
        env={**os.environ, "PYTHONHASHSEED": "0"},
    )
    found = _COLLECTED.search(done.stderr)
    if found is None:
        raise RuntimeError(f"callgrind printed no total for {case}:\n{done.stderr[-2000:]}")
    return int(found.group(1))


def per_step(case: str, runs: int = RUNS, *, steps: int = SEQ_STEPS) -> float:
    """Instructions per step of the row 2 run (per ``steps`` steps), in thousands."""
    with ThreadPoolExecutor(2) as pool:  # the two valgrind processes side by side
        timed, bare = pool.map(_instructions, (case, case), (runs, 0))
    return (timed - bare) / (runs * steps) / 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--child", nargs=2, metavar=("CASE", "RUNS"), help=argparse.SUPPRESS)
    parser.add_argument(
        "--stream", action="store_true", help="also measure runs read through stream(goal)"
    )
    parser.add_argument(
        "--full-speed", action="store_true", help="also measure with no loop turn a step (HOLD)"
    )
    parser.add_argument(
        "--tracing", action="store_true", help="row 6 in instructions: traced, untraced, SDK floor"
    )
    parser.add_argument("--run", action="store_true", help="a whole 1-step run, per run")
    parser.add_argument(
        "--scale", action="store_true", help=f"row 5: per run of {SCALE_RUNS:,} runs at once"
    )
    parser.add_argument(
        "--case",
        choices=("plan-step", "one-tool"),
        default="plan-step",
        help="plan-step: row 2 (default); one-tool: row 3, a one-tool worker run",
    )
    parser.add_argument(
        "--runs",
        type=int,
        default=None,
        help=f"timed runs per case (default {RUNS}; {ONE_TOOL_RUNS} for one-tool)",
    )
    args = parser.parse_args()
    if args.child:
        case, runs = args.child
        _CASES[case](int(runs))
        return
    if shutil.which("valgrind") is None:
        sys.exit("valgrind is not on the PATH; install it (Debian: apt install valgrind)")
    if args.tracing:
        _tracing(args.runs or RUNS)
        return
    if args.run or args.scale:
        _per_run(args.run, args.scale, args.runs or RUNS)
        return
    if args.case == "one-tool":
        runs = args.runs or ONE_TOOL_RUNS
        figure = per_step("one-tool", runs, steps=1)
        print(f"row 3 shape (one-tool worker run: model -> tool -> model), callgrind, {runs} runs:")
        print(f"  regiment   {figure:9.1f} k instructions per run")
        return
    runs = args.runs or RUNS
    cases = ["regiment", "regiment-stream"] if args.stream else ["regiment"]
    if args.full_speed:
        cases.append("regiment-full-speed")
    if importlib.util.find_spec("langgraph") is not None:
        cases.append("langgraph")
    print(f"row 2 shape ({SEQ_STEPS}-step sequential plan), callgrind, {runs} runs:")
    figures = {case: per_step(case, runs) for case in cases}
    for case, figure in figures.items():
        ratio = figure / figures["regiment"]
        print(f"  {case:19s} {figure:9.1f} k instructions per step   {ratio:5.2f}x")


def _per_run(run: bool, scale: bool, runs: int) -> None:
    """Whole runs counted: a 1-step run, and/or one of a burst of row 5's runs."""
    if run:
        figure = per_step("run", runs, steps=1)
        print(f"a 1-step run, callgrind, {runs} runs: {figure:9.1f} k instructions per run")
    if scale:
        figure = per_step("scale", 1, steps=SCALE_RUNS)
        print(f"row 5 shape ({SCALE_RUNS:,} concurrent {SCALE_STEPS}-step runs), callgrind, "
              f"one burst: {figure:9.1f} k instructions per run")  # fmt: skip


def _spans_per_step() -> tuple[float, float]:
    """Spans per step of a traced run, and attributes per span, counted at the exporter."""
    telemetry, exporter, provider = rc.tracing(exact=True)
    anyio.run(rc.sequential_run_s, rc.sequential_team(SEQ_STEPS, telemetry=telemetry), 1)
    provider.force_flush()
    spans_per_step = exporter.spans / (2 * SEQ_STEPS)  # a warm-up run and a counted one
    return spans_per_step, exporter.attributes_per_span()


def _tracing(runs: int) -> None:
    """Row 6 in instructions: what tracing adds per step, minus the SDK's own span cost."""
    spans, attributes = _spans_per_step()
    off, on = per_step("regiment", runs), per_step("regiment-traced", runs)
    span = per_step("sdk-span", runs)
    floor = spans * span
    own = on - off - floor
    print(f"row 6 shape ({SEQ_STEPS}-step sequential plan), callgrind, {runs} runs:")
    print(f"  tracing off            {off:9.1f} k instructions per step")
    print(f"  tracing on             {on:9.1f} k instructions per step   {on / off:5.2f}x")
    print(f"  SDK floor              {floor:9.1f} k ({spans:.2f} spans x {span:.1f} k, "
          f"{SPAN_ATTRIBUTES} attributes; regiment's spans carry {attributes:.1f})")  # fmt: skip
    print(f"  regiment's own cost    {own:9.1f} k above the floor "
          f"= {100 * own / floor:.0f}% of it (spans exported inline: exact)")  # fmt: skip


if __name__ == "__main__":
    main()
