"""Row 6 in bytecodes: whose Python a traced step adds, regiment's or the SDK's.

    .venv/bin/python bench/tracing_share.py           # the split, and regiment's functions
    .venv/bin/python bench/tracing_share.py --top 30  # more of them

Row 6's wall-clock figure compares what tracing adds to a step with a floor of SDK
spans made in a tight loop, where the SDK's code and data stay in the CPU's caches;
amid a step's work the same spans cost more (floor 2), so the wall figure mixes
regiment's own work with where the SDK runs. This counts instead, under
``sys.settrace``, the bytecodes a traced row 2 step executes beyond an untraced one,
by whose code ran them: ``regiment`` (this package), ``opentelemetry`` (API and
SDK), ``anyio`` and the rest (the standard library: locks, ``contextvars``,
``time``). Exact and independent of the machine's load.

Per marginal step (20-step runs less 10-step runs, ``RUNS`` of each, on a warmed-up
team, spans through a ``SimpleSpanProcessor`` to a counting sink, as
``bench/instructions.py --tracing`` counts), with the worker's ``HOLD`` out of reach
as ``bench/step_census.py`` sets it (a step at full speed).
"""

from __future__ import annotations

import argparse
import collections
from types import FrameType
from typing import Any

import regiment_cases as rc
from step_census import under_tracer

import regiment
import regiment.hierarchy.workers._step_actor as step_actor

__all__ = ("main", "share")

RUNS = 3
_OURS = f"{regiment.__path__[0]}/"
Counts = tuple[collections.Counter[str], collections.Counter[str]]


def _group(path: str) -> str:
    # The checkout is the package, and `make`'s .venv and bench/ sit inside it: neither
    # installed packages nor the bench's own counting exporter are regiment's.
    if path.startswith(f"{_OURS}bench/"):
        return "the bench's exporter"
    if path.startswith(_OURS) and "/site-packages/" not in path:
        return "regiment"
    for name in ("opentelemetry", "anyio"):
        if f"/{name}/" in path:
            return name
    return "standard library and the rest"


def _counted(steps: int, traced: bool) -> Counts:
    groups: collections.Counter[str] = collections.Counter()
    ours: collections.Counter[str] = collections.Counter()

    def tracer(frame: FrameType, event: str, _: Any) -> Any:
        if event == "call":
            frame.f_trace_opcodes = True
        elif event == "opcode":
            code = frame.f_code
            group = _group(code.co_filename)
            groups[group] += 1
            if group == "regiment":
                ours[f"{code.co_filename.removeprefix(_OURS)}:{code.co_qualname}"] += 1
        return tracer

    telemetry = rc.tracing(exact=True)[0] if traced else None
    under_tracer(tracer, steps, RUNS, rc.sequential_team(steps, telemetry=telemetry))
    return groups, ours


def share() -> Counts:
    """Bytecodes a traced step adds (traced less untraced, per marginal step), by group
    and, for regiment's, by function."""
    vars(step_actor)["HOLD"] = 1e9  # the runner never turns the loop (a step at full speed)
    on = [_counted(steps, True) for steps in (20, 10)]
    off = [_counted(steps, False) for steps in (20, 10)]
    per = 10 * RUNS
    added: list[collections.Counter[str]] = []
    for part in (0, 1):
        total: collections.Counter[str] = collections.Counter()
        for key in set(on[0][part]) | set(off[0][part]) | set(on[1][part]) | set(off[1][part]):
            on_key = on[0][part][key] - on[1][part][key]
            off_key = off[0][part][key] - off[1][part][key]
            total[key] = round((on_key - off_key) / per)
        added.append(total)
    return added[0], added[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--top", type=int, default=15, help="regiment's functions listed")
    args = parser.parse_args()
    groups, ours = share()
    total = sum(groups.values())
    print("bytecodes a traced row 2 step adds over an untraced one, per marginal step")
    for group, count in groups.most_common():
        print(f"  {count:7,d}  {count / total:6.1%}  {group}")
    print(f"  {total:7,d}  total")
    others = total - groups["regiment"]
    print(
        f"regiment's share against everything else tracing adds: {groups['regiment'] / others:.1%}"
    )
    print("regiment's, by function:")
    for name, count in ours.most_common(args.top):
        if count:
            print(f"  {count:7,d}  {name}")


if __name__ == "__main__":
    main()
