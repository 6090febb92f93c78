"""Where a worker's steps run: in the team's process (the default), or on Ray.

:class:`Ray` is plain configuration; nothing here imports ``ray`` (the
optional ``ray`` extra is imported only when a team with a Ray-placed worker
starts, in :mod:`._ray`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, final

from regiment.errors import ConfigError

if TYPE_CHECKING:
    from regiment.hierarchy.workers._worker import Worker

__all__ = ("POOL_KEYS", "Ray", "WorkerBuild", "by_pool", "check_pools", "not_started", "pool_of")

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
    steps at once. Workers that name the same ``pool`` share its replicas (one
    set of Ray processes hosts all of them; a replica then runs up to the sum of
    their ``max_concurrent_steps``). The model client and tools are built inside each replica
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
        pool: a name the workers of one team that share replicas give: each
            replica hosts every worker of the pool and routes a step by its worker.
            Their other settings (all but ``build``) must agree. ``None``: the worker
            has replicas of its own.
        start_timeout: seconds ``Team.start()`` waits for every replica to be up.
            Ray keeps a replica it cannot place (a resource no node has) pending
            without an error; past this the replicas are killed and the start
            fails with a ``ConfigError`` that names what each replica asked for.
            Also how long a lost step's retry waits for a replica Ray restarts.
            Raise it for a cluster that adds nodes on demand.
    """

    num_cpus: float = 1.0
    num_gpus: float = 0.0
    resources: Mapping[str, float] = field(default_factory=dict)
    replicas: int = 1
    address: str | None = None
    max_restarts: int = 1
    build: WorkerBuild | None = None
    otlp_endpoint: str | None = None
    pool: str | None = None
    start_timeout: float = 120.0

    def __post_init__(self) -> None:
        if isinstance(self.replicas, bool) or not isinstance(self.replicas, int):
            raise ConfigError(f"Ray(replicas={self.replicas!r}): give a whole number >= 1")
        if self.replicas < 1:
            raise ConfigError(f"Ray(replicas={self.replicas}): a worker needs at least 1 replica")
        _check_amounts(self)
        if self.max_restarts < -1:
            raise ConfigError(
                f"Ray(max_restarts={self.max_restarts}): give -1 (no limit), 0 or more"
            )
        if isinstance(self.build, str) and ":" not in self.build:
            raise ConfigError(
                f"Ray(build={self.build!r}): expected 'module:function' "
                "(e.g. 'myapp.workers:billing'), or a picklable function"
            )
        if not self.start_timeout > 0:  # also refuses NaN
            raise ConfigError(
                f"Ray(start_timeout={self.start_timeout!r}): give the seconds to wait "
                "for the replicas to start, more than 0"
            )
        if self.pool is not None and (not isinstance(self.pool, str) or not self.pool.strip()):
            raise ConfigError(
                f"Ray(pool={self.pool!r}): give the pool a non-empty name, or None "
                "for replicas of the worker's own"
            )


def _check_amounts(placement: Ray) -> None:
    """``num_cpus``, ``num_gpus`` and each of ``resources`` are finite amounts >= 0
    (Ray took a negative custom resource, or NaN, only at ``Team.start()``, if at all)."""
    given = {"num_cpus": placement.num_cpus, "num_gpus": placement.num_gpus}
    resources = placement.resources
    if not isinstance(resources, Mapping):
        raise ConfigError(
            f"Ray(resources={resources!r}): give a mapping of resource names to amounts, "
            "e.g. resources={'db_zone': 1}"
        )
    given.update({f"resources[{name!r}]": amount for name, amount in resources.items()})
    for where, amount in given.items():
        number = isinstance(amount, int | float) and not isinstance(amount, bool)
        if not (number and 0 <= amount < math.inf):  # also refuses NaN
            raise ConfigError(
                f"Ray({where}={amount!r}): give a finite number of 0 or more "
                "(resources cannot be negative)"
            )
    if any(not isinstance(name, str) or not name.strip() for name in resources):
        raise ConfigError(
            f"Ray(resources={dict(resources)!r}): name each resource with a non-empty string"
        )


POOL_KEYS = (
    "num_cpus",
    "num_gpus",
    "resources",
    "replicas",
    "address",
    "max_restarts",
    "otlp_endpoint",
    "start_timeout",
)
"""The settings of a :class:`Ray` placement that belong to its pool (all but ``build``)."""


def not_started(placement: Ray) -> str:
    """Why replicas of ``placement`` that did not start in time may not have."""
    return (
        f"its Ray replicas did not start within {placement.start_timeout:g} s "
        f"(Ray(start_timeout=...)); each asks for num_cpus={placement.num_cpus:g}, "
        f"num_gpus={placement.num_gpus:g}, resources={dict(placement.resources)}, and Ray "
        "waits without an error while no node has them: give the cluster those resources, "
        "ask for less, or raise start_timeout for a cluster that scales up"
    )


def pool_of(worker: str, placement: Ray) -> str:
    """The pool a Ray-placed worker's replicas belong to: its named pool, else its own."""
    return placement.pool if placement.pool is not None else f"worker:{worker}"


def by_pool(workers: Iterable[Worker]) -> dict[str, list[tuple[Worker, Ray]]]:
    """The Ray-placed ``workers`` by pool (a worker without one is a pool of its own)."""
    pools: dict[str, list[tuple[Worker, Ray]]] = {}
    for worker in workers:
        placement = worker.placement
        assert placement is not None
        pools.setdefault(pool_of(worker.name, placement), []).append((worker, placement))
    return pools


def check_pools(placed: Iterable[tuple[str, Ray]]) -> None:
    """Raise ``ConfigError`` unless the workers of each named pool agree on its settings.

    Args:
        placed: each Ray-placed worker's name and placement.
    """
    first: dict[str, tuple[str, Ray]] = {}
    for name, placement in placed:
        if placement.pool is None:
            continue
        if placement.pool not in first:
            first[placement.pool] = (name, placement)
            continue
        other, wanted = first[placement.pool]
        differ = [
            f"{key} ({getattr(wanted, key)!r} and {getattr(placement, key)!r})"
            for key in POOL_KEYS
            if _setting(wanted, key) != _setting(placement, key)
        ]
        if differ:
            raise ConfigError(
                f"workers '{other}' and '{name}' share the Ray pool '{placement.pool}' but "
                f"differ in {', '.join(differ)}: the workers of a pool share its replicas, so "
                "give them the same settings (all but build), or put them in different pools"
            )


def _setting(placement: Ray, key: str) -> object:
    value = getattr(placement, key)
    return dict(value) if key == "resources" else value
