"""Workers on Ray: what a Ray-placed step costs over an in-process one, and how a
CPU-bound tool's throughput scales with 1, 2 and 4 replicas.

``.venv/bin/python bench/ray_steps.py`` starts its own local Ray
(``num_cpus=2``), stops it at the end, and prints:

- per step: a 10-step sequential plan (each step one instant model call) on an
  in-process worker, then on the same worker placed on one Ray replica; the
  difference is what the Ray hop costs (encode, Ray call, decode, both ways);
- throughput: 16 independent steps, each one call of a tool that burns about
  ``--burn-ms`` of CPU in pure Python, on an in-process worker (the tool runs in
  a thread, so the GIL serialises it) and on 1, 2 and 4 replicas (each replica
  asks Ray for ``2 / replicas`` CPUs, so they all fit on this machine);
- team start: 4 Ray-placed workers on replicas of their own (4 Ray processes)
  against the same 4 in one pool (1 process hosting all of them).

The benchmark measures the regiment of the checkout it is in: that tree is put first
on this process's path and on its replicas' (``PYTHONPATH`` in Ray's ``runtime_env``),
whatever else provides a ``regiment`` (an installed one, another worktree's).

(The file is not called ``ray.py``: the bench directory is on ``sys.path`` when
a bench script runs, and on mypy's path, so a ``ray.py`` here would shadow Ray.)
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import hashlib
import json
import os
import sys
import tempfile
import time
from pathlib import Path

BENCH = str(Path(__file__).resolve().parent)
CHECKOUT = Path(__file__).resolve().parents[1]  # the regiment this benchmark measures


def _checkout_dir() -> str:
    """A directory in which ``regiment`` is this checkout: its parent if it is named so,
    else one in the temporary directory holding a link of that name to it (one per
    checkout, made once and kept)."""
    if CHECKOUT.name == "regiment":
        return str(CHECKOUT.parent)
    tag = hashlib.sha256(str(CHECKOUT).encode()).hexdigest()[:12]
    links = Path(tempfile.gettempdir()) / f"regiment-bench-{tag}"
    links.mkdir(exist_ok=True)
    link = links / "regiment"
    if not link.is_symlink() or link.resolve() != CHECKOUT:
        made = links / f"regiment.{os.getpid()}"
        made.unlink(missing_ok=True)
        made.symlink_to(CHECKOUT, target_is_directory=True)
        made.replace(link)  # atomic: a bench starting meanwhile sees the old link or this one
    return str(links)


TREE = _checkout_dir()
sys.path.insert(0, TREE)  # before regiment is imported: this checkout's, here and on Ray

import anyio  # noqa: E402
import regiment_cases as rc  # noqa: E402

from regiment import (  # noqa: E402
    ModelRequest,
    ModelResponse,
    Planner,
    Ray,
    ScriptedModel,
    Team,
    Worker,
    text_response,
    tool,
    tool_call_response,
)


@tool
def burn(ms: int) -> int:
    """Spin the CPU for about ``ms`` milliseconds (pure Python, holds the GIL)."""
    end = time.thread_time() + ms / 1000
    spins = 0
    while time.thread_time() < end:
        spins += 1
    return os.getpid()


def _cpu_brain(steps: int, ms: int) -> object:
    plan = json.dumps(
        {
            "steps": [
                {"id": f"s{i}", "description": f"burn {i}", "worker": "w", "depends_on": []}
                for i in range(1, steps + 1)
            ]
        }
    )

    def reply(request: ModelRequest) -> ModelResponse:
        if request.role in ("planner", "replanner"):
            return text_response(plan)
        if request.role == "synthesizer":
            return text_response("answer")
        if request.messages[-1].role == "user" and len(request.messages) > 1:
            return text_response("burnt")
        return tool_call_response("burn", {"ms": ms})

    return reply


def cpu_worker(steps: int, ms: int, name: str = "w") -> Worker:
    """The worker the throughput rows use (importable: replicas build it by this name)."""
    return Worker(
        name=name,
        description="burns CPU",
        model=ScriptedModel(_cpu_brain(steps, ms)),  # type: ignore[arg-type]
        tools=[burn],
        max_concurrent_steps=steps,
    )


def cpu_team(steps: int, ms: int, replicas: int | None) -> Team:
    worker = cpu_worker(steps, ms)
    if replicas is not None:
        build = functools.partial(cpu_worker, steps, ms)
        worker = dataclasses.replace(
            worker, placement=Ray(build=build, replicas=replicas, num_cpus=2 / replicas)
        )
    return Team(
        name="cpu",
        planner=Planner(model=worker.model, max_steps=steps),
        workers=[worker],
        concurrency=steps,
    )


def four_workers(pool: str | None) -> Team:
    """Four Ray-placed workers, on replicas of their own or all in ``pool``."""
    workers = [
        dataclasses.replace(
            cpu_worker(1, 1, name),
            placement=Ray(build=functools.partial(cpu_worker, 1, 1, name), num_cpus=0.5, pool=pool),
        )
        for name in ("w1", "w2", "w3", "w4")
    ]
    return Team(name="four", planner=Planner(model=workers[0].model), workers=workers)


async def _start_s(team: Team) -> float:
    began = time.perf_counter()
    async with team.start():
        return time.perf_counter() - began


async def _per_step_s(team: Team, runs: int, steps: int) -> float:
    async with team.start() as running:
        await running.run("warm up")
        began = time.perf_counter()
        for _ in range(runs):
            await running.run("go")
        return (time.perf_counter() - began) / (runs * steps)


async def _throughput(team: Team, steps: int, rounds: int) -> float:
    async with team.start() as running:
        await running.run("warm up")
        began = time.perf_counter()
        for _ in range(rounds):
            await running.run("go")
        return steps * rounds / (time.perf_counter() - began)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20, help="runs per per-step figure")
    parser.add_argument("--burn-ms", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=3, help="runs of 16 steps per throughput row")
    args = parser.parse_args()
    import ray

    began = time.perf_counter()
    ray.init(
        num_cpus=2,
        include_dashboard=False,
        log_to_driver=False,
        # the replicas load this checkout's regiment too (Team.start() refuses any other)
        runtime_env={"env_vars": {"PYTHONPATH": os.pathsep.join((TREE, BENCH))}},
    )
    import regiment

    print(f"regiment {regiment.__version__} from {Path(regiment.__file__).resolve().parent}")
    print(f"ray.init: {time.perf_counter() - began:.1f}s")
    try:
        steps = 10
        local = rc.sequential_team(steps)
        (worker,) = local.workers
        assert isinstance(worker, Worker)
        placed = dataclasses.replace(
            local, workers=[dataclasses.replace(worker, placement=Ray(num_cpus=0))]
        )
        for name, team in (("in-process", local), ("on Ray, 1 replica", placed)):
            s = anyio.run(_per_step_s, team, args.runs, steps, backend="asyncio")
            print(f"per step, {name}: {s * 1e3:.2f} ms")
        for replicas in (None, 1, 2, 4):
            team = cpu_team(16, args.burn_ms, replicas)
            rate = anyio.run(_throughput, team, 16, args.rounds, backend="asyncio")
            label = "in-process" if replicas is None else f"{replicas} replica(s)"
            print(f"CPU-bound tool ({args.burn_ms} ms), {label}: {rate:.1f} steps/s")
        for pool, label in ((None, "own replicas (4 processes)"), ("all", "one pool (1 process)")):
            s = anyio.run(_start_s, four_workers(pool), backend="asyncio")
            print(f"team start, 4 workers on {label}: {s:.2f} s")
    finally:
        ray.shutdown()


if __name__ == "__main__":
    main()
