"""The floor under a regiment step: the same hops with none of regiment's logic.

``.venv/bin/python bench/floor.py`` passes a number back and forth the way a
step travels today: planner actor -> the worker's waiting runner (a step sent
to an idle worker goes straight to its runner) -> planner actor, two hops,
using the actors' own mailbox and nothing else. The runner keeps one cancel
scope across its steps, as regiment's runners do. It prints µs per step on
asyncio and trio: once with a reused runner task (what workers do), once with
a task spawned per step, in its own cancel scope (what they did before).
Whatever a real step costs above these figures is regiment's own work.

``--instructions`` counts the reused-runner floor in CPU instructions per step
under callgrind instead (exact; the wall-clock figures move with the machine's
load), on both backends.

Until 2026-12-03 (second round of #22) this modelled three hops (planner ->
worker actor -> runner -> planner) and a cancel scope per step. Since the third
round its mailboxes wait on the actors' own wake-ups (``system.new_wakeup()``),
as regiment's do.
"""

from __future__ import annotations

import statistics
import sys
import time

import anyio
from anyio.abc import TaskGroup

from regiment.actors._mailbox import Mailbox
from regiment.actors._wakeup import wakeup_factory

__all__ = ("main", "per_step_us")

STEPS = 20_000
REPEATS = 7


async def per_step_us(spawn_per_step: bool, steps: int = STEPS) -> float:
    """µs per step of ``steps`` planner -> runner -> planner rounds."""
    new_wakeup = wakeup_factory()
    to_planner: Mailbox[int] = Mailbox(64, new_wakeup)
    to_runner: Mailbox[int] = Mailbox(64, new_wakeup)
    done = anyio.Event()

    async def step(n: int) -> None:
        with anyio.CancelScope():  # noqa: ASYNC100 - a spawned step has its own scope
            to_planner.put_nowait(n)

    async def runner() -> None:
        with anyio.CancelScope():  # one scope for all of the runner's steps
            while True:
                n = await to_runner.get()
                if n is not None:
                    to_planner.put_nowait(n)

    async def planner(tg: TaskGroup) -> None:
        n = 0
        while True:
            if spawn_per_step:
                tg.start_soon(step, n)
            else:
                to_runner.put_nowait(n)
            got = await to_planner.get()
            if got is None:
                continue
            if got >= steps:
                done.set()
                return
            n = got + 1

    async with anyio.create_task_group() as tg:
        tg.start_soon(runner)
        started = time.perf_counter()
        tg.start_soon(planner, tg)
        await done.wait()
        elapsed = time.perf_counter() - started
        tg.cancel_scope.cancel()
    return elapsed / max(steps, 1) * 1e6


def _instructions() -> None:
    from callgrind_count import instructions_per_unit

    print("floor of a step, reused runner, callgrind (instructions per step)")
    for backend in ("asyncio", "trio"):
        per_step = instructions_per_unit([__file__, "--child", backend], 2_000, 12_000)
        print(f"  {backend:8s} {per_step / 1000:7.1f} k")


def main() -> None:
    if sys.argv[1:2] == ["--child"]:
        anyio.run(per_step_us, False, int(sys.argv[3]), backend=sys.argv[2])
        return
    if "--instructions" in sys.argv:
        _instructions()
        return
    print(f"floor of a step, median of {REPEATS} x {STEPS} steps (µs per step)")
    for backend in ("asyncio", "trio"):
        for spawn, label in ((False, "reused runner"), (True, "task per step")):
            samples = [anyio.run(per_step_us, spawn, backend=backend) for _ in range(REPEATS)]
            print(f"  {backend:8s} {label:14s} {statistics.median(samples):7.1f}")


if __name__ == "__main__":
    main()
