"""Log handlers for the command line and ``regiment serve`` (the library itself adds
only a ``NullHandler``): one line per record, with the record's run context.

Records of a run carry ``run_id``, ``step_id`` and ``worker`` in ``extra``
(see ``regiment.hierarchy.run._logs``); the formatter appends those that are set.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TextIO

from regiment.hierarchy import RunContextFilter

__all__ = ("CONTEXT", "SDK_LOGGERS", "ContextFormatter", "level_for", "logging_to")

CONTEXT = ("run_id", "step_id", "worker", "trace_id")

# The SDKs log their own retries ("Retrying request to ...") at INFO: shown with -v.
SDK_LOGGERS = ("anthropic", "openai")


class ContextFormatter(logging.Formatter):
    """Appends the record's ``run_id``/``step_id``/``worker``/``trace_id`` (from ``extra``)."""

    def format(self, record: logging.LogRecord) -> str:
        line = super().format(record)
        context = [f"{k}={getattr(record, k)}" for k in CONTEXT if getattr(record, k, None)]
        return f"{line} [{' '.join(context)}]" if context else line


def level_for(verbosity: int, *, default: int = logging.WARNING) -> int:
    """``-v`` is INFO, ``-vv`` (or more) DEBUG; none is ``default``."""
    if verbosity >= 2:
        return logging.DEBUG
    return logging.INFO if verbosity == 1 else default


@contextmanager
def logging_to(
    stream: TextIO, level: int, names: Sequence[str] = ("regiment", *SDK_LOGGERS)
) -> Iterator[logging.Handler]:
    """While inside, a handler on the ``names`` loggers writes records of ``level`` and
    above to ``stream``; the loggers' levels and handlers are put back afterwards."""
    handler = logging.StreamHandler(stream)
    handler.setFormatter(ContextFormatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    handler.addFilter(RunContextFilter())  # an SDK's retry names the run and step it is in
    loggers = [logging.getLogger(name) for name in names]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.addHandler(handler)
        logger.setLevel(level)
    try:
        yield handler
    finally:
        for logger, old in zip(loggers, levels, strict=True):
            logger.removeHandler(handler)
            logger.setLevel(old)
