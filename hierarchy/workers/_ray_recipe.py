"""What a Ray replica builds a worker from (:class:`HostedWorker`), made in the
caller's process and checked to pickle there, with a message that says what to
do, rather than deep inside Ray.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from types import ModuleType
from typing import cast

from regiment.errors import ConfigError
from regiment.hierarchy._prompts import Prompts
from regiment.hierarchy.guard._types import Guardrail, as_guardrail
from regiment.hierarchy.workers._placement import Ray, WorkerBuild
from regiment.hierarchy.workers._ray_host import HostedWorker
from regiment.hierarchy.workers._worker import Worker
from regiment.models import ModelSettings, Price
from regiment.tools import MCPServer, Toolset

__all__ = ("hosted_worker",)

_STEP_KINDS = frozenset({"model_request", "model_reply", "tool_call", "tool_result"})


def hosted_worker(
    ray: ModuleType,
    worker: Worker,
    placement: Ray,
    prompts: Prompts,
    settings: ModelSettings | None,
    team_guardrails: Sequence[Guardrail],
) -> HostedWorker:
    """What a replica hosts ``worker`` from; checked to pickle here, with a message
    that says what to do, rather than deep inside Ray."""
    recipe: object = placement.build
    if recipe is None:
        # its MCP servers too: each replica starts its own (see _ray_mcp)
        tools: list[Toolset | MCPServer] = [worker.toolset, *worker.mcp_servers]
        recipe = dataclasses.replace(worker, tools=tools, placement=None)
    try:
        ray.cloudpickle.dumps(recipe)
    except Exception as exc:
        raise ConfigError(
            f"worker '{worker.name}' is placed on Ray, but "
            f"{'its Ray(build=...)' if placement.build is not None else 'its model or tools'} "
            f"cannot be pickled for the replicas ({type(exc).__name__}: {exc}); give "
            "Ray(build='module:function') naming a function that builds the Worker on the "
            "Ray node (team-file workers do this for you)"
        ) from exc
    step_guards = (*team_guardrails, *(as_guardrail(g) for g in worker.guardrails))
    guards = tuple(g for g in step_guards if g.kind in _STEP_KINDS)  # not the plan's, answer's
    per_tool = {
        tool: tuple(as_guardrail(g) for g in given)
        for tool, given in worker.tool_guardrails.items()
    }
    price = getattr(worker.model, "price", None)
    return HostedWorker(
        name=worker.name,
        price=price if isinstance(price, Price) else None,
        build=cast("WorkerBuild | Worker", recipe),
        prompts=prompts,
        settings=worker.settings if settings is None else settings.merge(worker.settings),
        guardrails=tuple(_shipped(ray, worker.name, g) for g in guards),
        tool_guardrails={
            tool: tuple(_shipped(ray, worker.name, g) for g in given)
            for tool, given in per_tool.items()
        },
    )


def _shipped(ray: ModuleType, worker: str, guard: Guardrail) -> Guardrail | str:
    """How ``guard`` reaches the replicas: a team file's by its import path, any
    other pickled (checked here)."""
    if guard.source:
        return guard.source
    try:
        ray.cloudpickle.dumps(guard)
    except Exception as exc:
        raise ConfigError(
            f"worker '{worker}' is placed on Ray, but its guardrail '{guard.name}' cannot be "
            f"pickled for the replicas ({type(exc).__name__}: {exc}); make the guard a "
            "module-level function or Guardrail and name it in a team file (replicas import "
            "those by path), or build what it holds (a model client) inside its check"
        ) from exc
    return guard
