"""``[workers.placement] kind = "ray"``: the worker's replicas build it from the same
team file, so only the decoded file and a few names cross to the Ray nodes."""

from __future__ import annotations

import dataclasses
import functools
import sys
from pathlib import Path

from msgspec.structs import replace as _replace

from regiment.config._schema import PlacementConfig, TeamConfig
from regiment.errors import ConfigError
from regiment.hierarchy import Ray, Worker
from regiment.models import Model

__all__ = ("SHARED_POOL", "place_on_ray", "placed", "rebuild_worker", "trace_replicas")

SHARED_POOL = "workers"
"""The Ray pool ``--workers ray`` puts the workers without a placement of their own in."""


def placed(
    worker: Worker, config: TeamConfig, index: int, source: str, model: str | Model | None
) -> Worker:
    """``worker`` with the placement its entry asks for (unchanged when local)."""
    wanted = config.workers[index].placement
    if wanted is None or wanted.kind == "local":
        return worker
    build = functools.partial(rebuild_worker, config, index, source, model, _import_roots())
    try:
        ray = Ray(
            num_cpus=wanted.num_cpus,
            num_gpus=wanted.num_gpus,
            resources=dict(wanted.resources),
            replicas=wanted.replicas,
            address=wanted.address,
            max_restarts=wanted.max_restarts,
            build=build,
            otlp_endpoint=wanted.otlp_endpoint,
            pool=wanted.pool,
            start_timeout=wanted.start_timeout,
        )
    except ConfigError as exc:
        raise ConfigError(f"{source}: workers[{index}].placement: {exc}") from exc
    # its MCP servers stay: its replicas start them (the replicas' own, built from the file)
    return dataclasses.replace(worker, tools=(worker.toolset, *worker.mcp_servers), placement=ray)


def place_on_ray(config: TeamConfig, *, address: str | None = None) -> TeamConfig:
    """``config`` with every model-backed worker placed on Ray (``--workers ray``).

    The workers without a ``[workers.placement]`` table share one pool
    (:data:`SHARED_POOL`: one set of replicas hosts them all, so one Ray process
    serves the team); a worker's own ``[workers.placement]`` keys stay (its own
    replicas, unless it names a pool). ``address`` replaces every worker's address.
    """
    workers = []
    for worker in config.workers:
        if worker.team is None:
            own = worker.placement or PlacementConfig(pool=SHARED_POOL)
            chosen = address if address is not None else own.address
            worker = _replace(worker, placement=_replace(own, kind="ray", address=chosen))
        workers.append(worker)
    return _replace(config, workers=tuple(workers))


def trace_replicas(config: TeamConfig, endpoint: str) -> TeamConfig:
    """``config`` with the Ray replicas of its workers exporting their spans to
    ``endpoint`` (``regiment run --trace jaeger``), unless a placement names its own
    ``otlp_endpoint``; a nested team's file keeps its own placements."""
    workers = []
    for worker in config.workers:
        own = worker.placement
        if own is not None and own.kind == "ray" and own.otlp_endpoint is None:
            worker = _replace(worker, placement=_replace(own, otlp_endpoint=endpoint))
        workers.append(worker)
    return _replace(config, workers=tuple(workers))


def rebuild_worker(
    config: TeamConfig,
    index: int,
    source: str,
    model: str | Model | None,
    import_roots: tuple[str, ...],
) -> Worker:
    """On a Ray replica: the worker ``config.workers[index]`` describes, built as the
    team's process built it (same tools, same model spec, no placement)."""
    for root in reversed(import_roots):  # the driver's --app-dir and PYTHONPATH entries
        if root not in sys.path:
            sys.path.insert(0, root)
    from regiment.config._build import build_worker  # not at import time: _build imports this

    return build_worker(config, index, source, model)


def _import_roots() -> tuple[str, ...]:
    """The driver's own import directories (not the installed packages)."""
    installed = {sys.prefix, sys.base_prefix, sys.exec_prefix}
    roots = [str(Path.cwd())]
    for entry in sys.path:
        if entry and Path(entry).is_dir() and not any(entry.startswith(p) for p in installed):
            roots.append(str(Path(entry).resolve()))
    return tuple(dict.fromkeys(roots))
