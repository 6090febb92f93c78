"""Where a worker's steps run: in the team's process (the default), or on Ray.

:class:`Ray` is plain configuration; nothing here imports ``ray`` (the
optional ``ray`` extra is imported only when a team with a Ray-placed worker
starts, in :mod:`._ray`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, final

from regiment.errors import ConfigError

if TYPE_CHECKING:
    from regiment.hierarchy.workers._worker import Worker

__all__ = ("Ray", "WorkerBuild")

WorkerBuild = str | Callable[[], "Worker"]
"""How a Ray replica makes its worker: a ``"module:function"`` import path, or a
picklable function of no arguments (a module-level function, a ``functools.partial``
of one) returning the :class:`~regiment.hierarchy.Worker`."""


@final
@dataclass(frozen=True, kw_only=True)
class Ray:
    """Run a worker's steps on Ray async actors ("replicas") instead of in-process.

    The planner stays in the caller's process (plan versions, budgets, the
    journal and tracing stay authoritative there); each replica hosts the
    worker's tool loop and runs up to the worker's ``max_concurrent_steps``
    steps at once. The model client and tools are built inside each replica
    by ``build``, so nothing unpicklable crosses. Ray is asyncio-only: a team
    with a Ray-placed worker must be started under asyncio.

    Attributes:
        num_cpus: CPUs Ray reserves for each replica.
        num_gpus: GPUs Ray reserves for each replica.
        resources: custom Ray resources each replica needs (e.g. ``{"db_zone": 1}``).
        replicas: how many replicas serve the worker (>= 1); steps go to them in turn,
            and a step whose replica died is retried once on another one.
        address: the Ray cluster to join (``"ray://..."`` or ``"host:port"``);
            ``None``: a running local cluster, else a new local one. A process that
            has already joined a Ray (its own ``ray.init``) keeps using that one.
        max_restarts: how many times Ray restarts a replica whose process died.
        build: how a replica makes the worker (see :data:`WorkerBuild`); ``None``:
            the :class:`~regiment.hierarchy.Worker` itself is pickled (its model and
            tools must pickle, e.g. module-level functions and a ``ScriptedModel``
            of a module-level brain).
        otlp_endpoint: where replicas export their spans (OTLP/HTTP, as for
            ``configure_tracing``); ``None``: the replica's own
            ``OTEL_EXPORTER_OTLP_ENDPOINT``, else its spans are not exported.
    """

    num_cpus: float = 1.0
    num_gpus: float = 0.0
    resources: Mapping[str, float] = field(default_factory=dict)
    replicas: int = 1
    address: str | None = None
    max_restarts: int = 1
    build: WorkerBuild | None = None
    otlp_endpoint: str | None = None

    def __post_init__(self) -> None:
        if isinstance(self.replicas, bool) or not isinstance(self.replicas, int):
            raise ConfigError(f"Ray(replicas={self.replicas!r}): give a whole number >= 1")
        if self.replicas < 1:
            raise ConfigError(f"Ray(replicas={self.replicas}): a worker needs at least 1 replica")
        if self.num_cpus < 0 or self.num_gpus < 0:
            raise ConfigError(
                f"Ray(num_cpus={self.num_cpus}, num_gpus={self.num_gpus}): "
                "resources cannot be negative"
            )
        if self.max_restarts < -1:
            raise ConfigError(
                f"Ray(max_restarts={self.max_restarts}): give -1 (no limit), 0 or more"
            )
        if isinstance(self.build, str) and ":" not in self.build:
            raise ConfigError(
                f"Ray(build={self.build!r}): expected 'module:function' "
                "(e.g. 'myapp.workers:billing'), or a picklable function"
            )
