"""Run by test_ray_other_regiment in a process of its own: a local Ray whose workers
(the replicas) find the regiment in ``sys.argv[1]`` first on their PYTHONPATH, and a
team with one Ray-placed worker started on it. Prints one JSON line: the start's
error (``null``: it started) and the run's answer."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import anyio

from regiment.errors import ConfigError
from regiment.hierarchy import Planner, Ray, Team, Worker
from regiment.models import ModelRequest, ScriptedModel

ROOT = Path(__file__).resolve().parents[2]


def brain(request: ModelRequest) -> str:
    if request.role == "planner":
        return '{"steps": [{"id": "s1", "description": "greet", "worker": "w"}]}'
    return "hello from the replica"


def worker() -> Worker:
    """The worker, as the replica builds it (by this import path)."""
    return Worker(name="w", description="Greets.", model=ScriptedModel(brain))


def team() -> Team:
    # A start_timeout far beyond the test's own timeout: a refusal must not wait it out.
    placed = Worker(
        name="w",
        description="Greets.",
        model=ScriptedModel(brain),
        placement=Ray(build="tests.ray._other_regiment:worker", num_cpus=0, start_timeout=900),
    )
    return Team(name="t", planner=Planner(model=ScriptedModel(brain)), workers=[placed])


async def _child() -> dict[str, object]:
    try:
        async with team().start() as running:
            result = await running.run("greet")
    except ConfigError as exc:
        return {"error": str(exc), "answer": None}
    return {"error": None, "answer": result.answer}


def main() -> None:
    import ray

    other = sys.argv[1]
    paths = (other, str(ROOT), os.environ.get("PYTHONPATH", ""))
    ray.init(
        address="local",
        num_cpus=1,
        include_dashboard=False,
        log_to_driver=False,
        runtime_env={"env_vars": {"PYTHONPATH": os.pathsep.join(filter(None, paths))}},
    )
    try:
        print(json.dumps(anyio.run(_child, backend="asyncio")), flush=True)
    finally:
        ray.shutdown()


if __name__ == "__main__":
    main()
