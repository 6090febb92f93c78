"""Workers: a ``Worker``'s actor and its bounded tool loop, the step actor that
queues, runs, times out and cancels steps, and a whole team serving as a worker."""

from typing import TYPE_CHECKING

from regiment._lazy import LazyNames

__all__ = ("Ray", "TeamWorker", "Worker", "WorkerActor")

# Each name loads with its module on first use (issue #22): a Worker loads
# without the nested-team worker and the run engine it needs.
_LAZY_NAMES = LazyNames(
    __name__,
    {
        "regiment.hierarchy.workers._placement": ("Ray",),
        "regiment.hierarchy.workers._team_worker": ("TeamWorker",),
        "regiment.hierarchy.workers._worker": ("Worker",),
        "regiment.hierarchy.workers._worker_actor": ("WorkerActor",),
    },
)

if TYPE_CHECKING:
    from regiment.hierarchy.workers._placement import Ray
    from regiment.hierarchy.workers._team_worker import TeamWorker
    from regiment.hierarchy.workers._worker import Worker
    from regiment.hierarchy.workers._worker_actor import WorkerActor


def __getattr__(name: str) -> object:
    return _LAZY_NAMES.load(name)


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
