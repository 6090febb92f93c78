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
from contextvars import ContextVar, Token
from typing import final

__all__ = ("LOG_MARK", "RunContextFilter", "log_context")

_FIELDS = ("run_id", "step_id", "worker")
# Each anyio task starts with a copy of its parent's context, so a mark set in a
# step's task is seen by everything that task awaits, and by no other step.
_CURRENT: ContextVar[tuple[str, str | None, str | None] | None] = ContextVar(
    "regiment_log_context", default=None
)
# The variable itself, for the one path that marks every step (``StepActor._run_step``):
# ``LOG_MARK.set((run_id, step_id, worker))`` and ``reset`` are C calls, where entering
# and leaving a ``log_context`` is three Python calls a step (issue #22).
LOG_MARK = _CURRENT


@final
class log_context:  # lower case: used like the function it was, ``with log_context(...)``
    """Mark records made inside the block (in this task) as the run's.

    A class, not ``@contextmanager``: it is entered for every step, and a
    generator-based manager costs a generator and three calls more each time.
    """

    __slots__ = ("_mark", "_token")

    def __init__(self, run_id: str, step_id: str | None = None, worker: str | None = None) -> None:
        self._mark = (run_id, step_id, worker)
        self._token: Token[tuple[str, str | None, str | None] | None] | None = None

    def __enter__(self) -> None:
        self._token = _CURRENT.set(self._mark)

    def __exit__(self, *exc: object) -> None:
        if self._token is not None:
            _CURRENT.reset(self._token)


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
