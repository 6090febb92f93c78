"""Which failed runs stop unfinished, so that a resume finishes them.

Read in three places that must agree: a service's view of the run (``stalled``), the
``regiment`` command's exit code (5: stopped, resumable), and the run's journal, which
records no end for a run whose error has a ``ClusterLost`` cause (``run/_journaling``), so
it lists ``stalled`` too; such a run's ``RunFailed`` names that cause as its
``error_type`` (``run/_step_events.failed``). Today that is the one cause: the Ray cluster
a step ran on went away, in a journaled run. tests/serve/test_cluster_lost_agree.py pins
that the three agree.
"""

from __future__ import annotations

from regiment.errors import ClusterLost
from regiment.hierarchy.events import Event, RunFailed

__all__ = ("stopped_resumably",)


def stopped_resumably(last: Event | None, *, journaled: bool) -> bool:
    """Whether a run whose last event is ``last`` stopped unfinished, so that a resume
    finishes it: it was journaled (``journaled``) and failed because its Ray cluster went
    away (``RunFailed`` with ``error_type="ClusterLost"``). Its journal lists it
    ``stalled``, as a service does, and ``regiment run`` exits 5.

    Args:
        last: the run's last event (``None``: it had none).
        journaled: whether the run has a journal (without one nothing can resume it).
    """
    return journaled and isinstance(last, RunFailed) and last.error_type == ClusterLost.__name__
