"""Which reads wait for a database server that went away.

A write waits for the server (a restart, a fail-over) for up to the journal's
``reconnect_timeout``, so a restart holds runs up instead of failing them. A read
fails at once while the server cannot be reached (``regiment runs``, a service's
``GET``: it answers now, "unavailable", rather than queueing behind the writes),
except the run engine's own reads, made inside :func:`patient_reads`: a session's
history, an approval's look-up, a resume's replay are part of a run in progress, and
wait as its writes do. The mark is a context variable, so it reaches the journal's
worker thread with the call.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

__all__ = ("patient_reads", "reads_wait")

_PATIENT: ContextVar[bool] = ContextVar("regiment_journal_patient_reads", default=False)


@contextmanager
def patient_reads() -> Iterator[None]:
    """Reads made inside wait for a server that went away, as writes do (a run's own)."""
    token = _PATIENT.set(True)
    try:
        yield
    finally:
        _PATIENT.reset(token)


def reads_wait() -> bool:
    """Whether a read made here waits for the server (inside ``patient_reads``)."""
    return _PATIENT.get()
