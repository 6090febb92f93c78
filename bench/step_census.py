"""What a plan step's path is made of: hand-offs, not time (issue #22).

    .venv/bin/python bench/step_census.py            # the runner never turns the loop
    .venv/bin/python bench/step_census.py --hold     # HOLD as shipped (see below)

Runs the row 2 shape (a sequential plan, instant model, asyncio) with 20 steps and
with 10, five times each on a warmed-up team, under ``sys.settrace``, and prints the
difference per step: bytecodes, Python calls (a coroutine's resume counts), and how
many of them were loop turns, task starts, cancel scopes made, wake-ups made,
envelopes, turns taken in the planner's context, run changes recorded and events
emitted. Exact and independent of the machine's load.

A worker's runner lets the loop turn once it has run steps for ``HOLD`` (1 ms)
without waiting; at full speed that is once per ~20 steps, but under a tracer (and
under callgrind) every step outlasts it. By default ``HOLD`` is set out of reach,
so the figures are those of a step at full speed; ``--hold`` keeps it, and the
loop turn each step then pays (what ``bench/instructions.py`` counts) shows.
"""

from __future__ import annotations

import asyncio.base_events
import collections
import sys
from types import CodeType, FrameType
from typing import Any

import anyio
import regiment_cases as rc
from anyio._backends import _asyncio as anyio_asyncio

import regiment.hierarchy.workers._step_actor as step_actor
from regiment.actors import ContextTurns
from regiment.actors._system import ActorSystem
from regiment.actors._wakeup import AsyncioWakeup
from regiment.hierarchy import Team
from regiment.hierarchy.run._book import RunBook

__all__ = ("census", "main", "under_tracer")

RUNS = 5
_WATCHED: dict[str, CodeType] = {
    "loop turns (BaseEventLoop._run_once)": vars(asyncio.base_events.BaseEventLoop)[
        "_run_once"
    ].__code__,
    "task starts (loop.create_task)": asyncio.base_events.BaseEventLoop.create_task.__code__,
    "cancel scopes made (anyio CancelScope.__init__)": anyio_asyncio.CancelScope.__init__.__code__,
    "wake-ups made (AsyncioWakeup.__init__)": AsyncioWakeup.__init__.__code__,
    "envelopes (ActorSystem.envelope)": ActorSystem.envelope.__code__,
    "turns in the planner's context (ContextTurns.run)": ContextTurns.run.__code__,
    "run changes recorded (RunBook.apply)": RunBook.apply.__code__,
    "events emitted (RunBook.emit)": RunBook.emit.__code__,
}
_NAMES = {code: name for name, code in _WATCHED.items()}


def _counted(steps: int) -> collections.Counter[str]:
    """Counts over ``RUNS`` runs of a ``steps``-step plan on a warmed-up team."""
    counts: collections.Counter[str] = collections.Counter()

    def tracer(frame: FrameType, event: str, _: Any) -> Any:
        if event == "call":
            counts["Python calls"] += 1
            if (name := _NAMES.get(frame.f_code)) is not None:
                counts[name] += 1
            frame.f_trace_opcodes = True
        elif event == "opcode":
            counts["bytecodes"] += 1
        return tracer

    under_tracer(tracer, steps, RUNS, rc.sequential_team(steps, recorded=False))
    return counts


def under_tracer(tracer: Any, steps: int, runs: int, team: Team) -> None:
    """``runs`` runs of ``team`` (a ``steps``-step row 2 plan) under ``sys.settrace(tracer)``,
    after three runs that warm it up, on asyncio."""

    async def traced() -> None:
        async with team.start() as running:
            for _ in range(3):
                await running.run("warm up")
            sys.settrace(tracer)
            try:
                for _ in range(runs):
                    await running.run("do the steps")
            finally:
                sys.settrace(None)

    anyio.run(traced, backend="asyncio")


def census() -> dict[str, float]:
    """Per marginal step: the 20-step runs' counts minus the 10-step runs', per step."""
    short, long = _counted(10), _counted(20)
    keys = ("bytecodes", "Python calls", *_WATCHED)
    return {key: (long[key] - short[key]) / (10 * RUNS) for key in keys}


def main() -> None:
    hold = "--hold" in sys.argv
    if not hold:
        vars(step_actor)["HOLD"] = 1e9  # the runner never turns the loop
    print("per marginal plan step, sys.settrace, " + ("HOLD as shipped" if hold else "no HOLD"))
    for key, value in census().items():
        print(f"  {value:8.2f}  {key}")


if __name__ == "__main__":
    main()
