"""Workers: a ``Worker``'s actor and its bounded tool loop, the step actor that
queues, runs, times out and cancels steps, and a whole team serving as a worker."""

from regiment.hierarchy.workers._placement import Ray
from regiment.hierarchy.workers._team_worker import TeamWorker
from regiment.hierarchy.workers._worker import Worker, WorkerActor

__all__ = ("Ray", "TeamWorker", "Worker", "WorkerActor")
