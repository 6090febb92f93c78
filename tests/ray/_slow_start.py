"""A worker whose Ray build never finishes: it tells the test's probe actor its replica
started building, then waits (a model client that hangs as it connects, say).
Module-level, so a replica imports it as ``tests.ray._slow_start``."""

from __future__ import annotations

import dataclasses
import functools
import os
import time
from typing import Any

from regiment.hierarchy import Planner, Ray, Team, Worker
from regiment.models import ScriptedModel

__all__ = ("slow_team",)


def _brain(request: object) -> str:
    return "done"


def _worker() -> Worker:
    return Worker(name="w", description="works", model=ScriptedModel(_brain))


def _hanging_build(probe: str, namespace: str) -> Worker:
    import ray

    actor: Any = ray.get_actor(probe, namespace=namespace)
    ray.get(actor.start.remote(os.getpid()))
    time.sleep(3600)  # never built: the replica is killed first
    return _worker()


def slow_team(probe: str, namespace: str) -> Team:
    """One worker on two Ray replicas whose builds hang once they told ``probe``."""
    build = functools.partial(_hanging_build, probe, namespace)
    worker = dataclasses.replace(_worker(), placement=Ray(build=build, num_cpus=0, replicas=2))
    return Team(name="slow", planner=Planner(model=ScriptedModel(_brain)), workers=[worker])
