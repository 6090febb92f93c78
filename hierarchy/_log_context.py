"""The run context of log records made by code that knows nothing of runs.

A model SDK logs its own retries ("Retrying request to /v1/messages ..."); it
cannot put a ``run_id`` in ``extra``. The engine marks the task a step (or a
planner-side model call) runs in with :func:`log_context`, and
:class:`RunContextFilter`, on a handler, copies that mark onto every record
made in the task that lacks it. ``regiment run -v`` and ``regiment serve`` put
the filter on their handlers; put it on yours to get the same.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import final

__all__ = ("RunContextFilter", "log_context")

_FIELDS = ("run_id", "step_id", "worker")
# Each anyio task starts with a copy of its parent's context, so a mark set in a
# step's task is seen by everything that task awaits, and by no other step.
_CURRENT: ContextVar[tuple[str, str | None, str | None] | None] = ContextVar(
    "regiment_log_context", default=None
)


@contextmanager
def log_context(
    run_id: str, step_id: str | None = None, worker: str | None = None
) -> Iterator[None]:
    """Mark records made inside the block (in this task) as the run's."""
    token = _CURRENT.set((run_id, step_id, worker))
    try:
        yield
    finally:
        _CURRENT.reset(token)


@final
class RunContextFilter(logging.Filter):
    """A handler filter: a record made inside :func:`log_context` gets its
    ``run_id``, ``step_id`` and ``worker`` (those it does not carry already)."""

    def filter(self, record: logging.LogRecord) -> bool:
        current = _CURRENT.get()
        if current is not None:
            for name, value in zip(_FIELDS, current, strict=True):
                if not hasattr(record, name):
                    setattr(record, name, value)
        return True
