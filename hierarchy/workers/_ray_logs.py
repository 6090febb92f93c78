"""A Ray replica's ``regiment`` log records, logged again in the caller's process.

In a replica, what the ``regiment`` loggers said during a step (a tool's result cut
to its limit, a sync tool left running, a model SDK's retry warning of ours) went to
the replica's own log file on its Ray node, where nobody looked: a failure nobody
sees. Each record a step makes at or above the level the caller's ``regiment``
logger is enabled for crosses its channel as a :class:`LogRecorded`, and the caller
logs it again through the same logger, with the step's ``run_id``, ``step_id`` and
``worker``, the replica's ``process`` id and ``processName`` (``ray::StepHost``),
and the time it was made, so the caller's handlers (``regiment run -v``'s, a
service's, your own) show it as an in-process worker's. A record made outside a step
(a replica building its workers) stays in the replica's log.
"""

from __future__ import annotations

import logging
from contextvars import ContextVar
from typing import final

from regiment._log_records import LOGGER_NAME
from regiment.hierarchy._messages import AssignStep
from regiment.hierarchy.workers._ray_channel import ReplicaChannel
from regiment.hierarchy.workers._wire import LogRecorded

__all__ = ("ReplicaLogHandler", "log_again", "wanted_level")

# The channel of the step a task (or a thread it started) works for, and the lowest
# level its caller logs; anyio's tasks and threads start with a copy of the context.
_STEP: ContextVar[tuple[ReplicaChannel, int] | None] = ContextVar(
    "regiment_ray_step_log", default=None
)
# Where the record was made is kept (the replica's file, line and function); the
# rest of a plain record's attributes are this process's to set.
_WHERE = frozenset(("pathname", "filename", "module", "lineno", "funcName", "threadName"))
_PLAIN = (
    frozenset(logging.LogRecord("", 0, "", 0, "", (), None).__dict__) | {"message", "asctime"}
) - _WHERE


def wanted_level() -> int:
    """The lowest level the caller's ``regiment`` logger logs: the replica sends no less."""
    return logging.getLogger(LOGGER_NAME).getEffectiveLevel()


@final
class ReplicaLogHandler(logging.Handler):
    """On a replica's ``regiment`` logger: sends a step's records to its caller."""

    installed: ReplicaLogHandler | None = None

    @classmethod
    def step(cls, channel: ReplicaChannel, level: int) -> object:
        """Send the records the calling task makes from now on (at ``level`` or above)
        to ``channel``; the token :meth:`done` takes."""
        logger = logging.getLogger(LOGGER_NAME)
        if cls.installed is None:
            cls.installed = cls()
            logger.addHandler(cls.installed)
        if logger.getEffectiveLevel() > level:  # else the records are never made here
            logger.setLevel(level)
        return _STEP.set((channel, level))

    @staticmethod
    def done(token: object) -> None:
        _STEP.reset(token)  # type: ignore[arg-type]

    def emit(self, record: logging.LogRecord) -> None:
        step = _STEP.get()
        if step is None or record.levelno < step[1]:
            return
        channel, _ = step
        try:
            fields = {
                key: value
                for key, value in record.__dict__.items()
                if key not in _PLAIN and isinstance(value, str | int | float | bool)
            }
            exc_text = record.exc_text
            if record.exc_info and not exc_text:
                exc_text = logging.Formatter().formatException(record.exc_info)
            channel.tell_anywhere(
                LogRecorded(
                    name=record.name,
                    level=record.levelno,
                    message=record.getMessage(),
                    created=record.created,
                    process=record.process or 0,
                    exc_text=exc_text,
                    fields=fields,
                )
            )
        except Exception:
            self.handleError(record)


def log_again(recorded: LogRecorded, assign: AssignStep, worker: str) -> None:
    """Log ``recorded`` (made by a replica during ``assign``'s step) in this process."""
    logger = logging.getLogger(recorded.name)
    if not logger.isEnabledFor(recorded.level):
        return
    record = logging.makeLogRecord(
        {
            **recorded.fields,
            "run_id": assign.run_id,
            "step_id": assign.step.id,
            "worker": worker or recorded.fields.get("worker"),
            "name": recorded.name,
            "levelno": recorded.level,
            "levelname": logging.getLevelName(recorded.level),
            "msg": recorded.message,
            "args": None,
            "created": recorded.created,
            "msecs": (recorded.created - int(recorded.created)) * 1000,
            "process": recorded.process,
            "processName": "ray::StepHost",
            "exc_text": recorded.exc_text,
        }
    )
    logger.handle(record)
