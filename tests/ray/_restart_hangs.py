"""A worker whose step's tool kills its Ray replicas' processes (the first time
only; with ``own``, only its own replica's); Ray restarts them. With ``hang``, the
restarted replica's build hangs (it tells the test's probe actor first). Module-level, so a replica imports it as
``tests.ray._restart_hangs``."""

from __future__ import annotations

import dataclasses
import functools
import json
import os
import signal
import time
from pathlib import Path
from typing import Any

from regiment.hierarchy import Budget, Planner, Ray, Team, Worker
from regiment.models import ModelRequest, ModelResponse, ScriptedModel, text_response
from regiment.models import tool_call_response as call
from regiment.tools import tool

__all__ = ("GOAL", "dying_team")

GOAL = "do the one step"


def _brain(request: ModelRequest) -> ModelResponse:
    if request.role in ("planner", "replanner"):
        return text_response(json.dumps({"steps": [{"id": "s1", "description": "work"}]}))
    if request.role == "synthesizer":
        return text_response("done")
    last = request.messages[-1]
    if last.role == "user" and any(getattr(p, "call_id", None) for p in last.parts):
        return text_response(str(getattr(last.parts[0], "content", "")))
    return call("die", {})


def _worker(folder: str, probe: str, namespace: str, own: bool = False) -> Worker:
    @tool
    def die() -> str:
        """Do the step's work (the first time: kills every replica's process, this one last)."""
        if os.path.exists(os.path.join(folder, "killed")):
            return "worked"
        Path(folder, "killed").touch()
        if own:
            os.kill(os.getpid(), signal.SIGKILL)
        import ray

        actor: Any = ray.get_actor(probe, namespace=namespace)
        state: dict[str, Any] = ray.get(actor.state.remote())
        asked: dict[str, int] = state["asked"]
        for pid in {int(k.split()[1]) for k in asked if k.startswith("replica ")} - {os.getpid()}:
            os.kill(pid, signal.SIGKILL)
        os.kill(os.getpid(), signal.SIGKILL)
        return "unreachable"

    return Worker(name="w", description="works", model=ScriptedModel(_brain), tools=[die])


def _build(folder: str, probe: str, namespace: str, hang: bool, own: bool = False) -> Worker:
    """The worker, its replica's pid told to ``probe``; with ``hang``, a build after the
    kill (a replica Ray restarted) tells ``probe`` it started, then hangs."""
    import ray

    actor: Any = ray.get_actor(probe, namespace=namespace)
    if hang and os.path.exists(os.path.join(folder, "killed")):
        ray.get(actor.start.remote(os.getpid()))
        time.sleep(3600)  # never built: the team kills the replica first
    ray.get(actor.effect.remote(f"replica {os.getpid()}"))
    return _worker(folder, probe, namespace, own)


def dying_team(
    folder: Path,
    probe: str,
    namespace: str,
    *,
    start_timeout: float,
    replicas: int,
    hang: bool,
    own: bool = False,
) -> Team:
    """One step on ``w``, whose replicas all die in it (``own``: only the one it runs
    on), and come back unless ``hang``."""
    build = functools.partial(_build, str(folder), probe, namespace, hang, own)
    placement = Ray(build=build, num_cpus=0, replicas=replicas, start_timeout=start_timeout)
    worker = dataclasses.replace(_worker(str(folder), probe, namespace, own), placement=placement)
    planner = Planner(model=ScriptedModel(_brain))
    # No replan: a failed step ends the run.
    return Team(name="dying", planner=planner, workers=[worker], budget=Budget(replans=0))
