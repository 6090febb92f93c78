"""Log handlers for the command line and ``regiment serve`` (the library itself adds
only a ``NullHandler``): one line per record, with the record's run context.

Records of a run carry ``run_id``, ``step_id`` and ``worker`` in ``extra``
(see ``regiment.hierarchy.run._logs``); the formatter appends those that are set.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TextIO

from regiment._text import visible
from regiment.hierarchy import RunContextFilter

__all__ = ("CONTEXT", "SDK_LOGGERS", "SHOWN", "ContextFormatter", "level_for", "logging_to")

CONTEXT = ("run_id", "step_id", "worker", "trace_id")

# The SDKs log their own retries ("Retrying request to ...") at INFO: shown with -v. The
# MCP SDK logs a line a stdio server wrote that is not MCP with a traceback. httpx (under
# the SDKs, and what a Ray replica's forwarded warnings may come from) logs every request
# at INFO: its lines start at WARNING below -vv (see ``_FLOORS``).
SDK_LOGGERS = ("anthropic", "openai", "mcp", "httpx")
# What the command line shows without -v: the SDKs' warnings, and a forced resume's word on
# what changed in the team (``regiment.resume``: a user who forced it must see that).
SHOWN = (*SDK_LOGGERS, "regiment.resume")
_FLOORS = {"httpx": logging.WARNING}


class ContextFormatter(logging.Formatter):
    """Appends the record's ``run_id``/``step_id``/``worker``/``trace_id`` (from ``extra``);
    control characters are shown as ``\\xNN`` escapes (see ``regiment._text.visible``).

    With ``sdk_tracebacks=False``, an SDK's record (a logger outside ``regiment``) that
    carries an exception shows it as one line, ``(Type: message)``, not a traceback: the
    SDK's code is not the user's to debug; ``-vv`` shows it whole.
    """

    def __init__(self, fmt: str, *, sdk_tracebacks: bool = True) -> None:
        super().__init__(fmt)
        self._sdk_tracebacks = sdk_tracebacks

    def format(self, record: logging.LogRecord) -> str:
        if record.exc_info and not self._sdk_tracebacks and not record.name.startswith("regiment"):
            exc = record.exc_info[1]
            first = str(exc).strip().splitlines()[:1]
            said = f"{type(exc).__name__}: {first[0]}" if first else type(exc).__name__
            record = copy.copy(record)  # other handlers may still want the traceback
            record.msg, record.args = f"{record.getMessage()} ({said})", None
            record.exc_info, record.exc_text = None, None
        line = super().format(record)
        context = [f"{k}={getattr(record, k)}" for k in CONTEXT if getattr(record, k, None)]
        # What a model, a tool or an MCP server wrote may be in it: shown, not obeyed.
        return visible(f"{line} [{' '.join(context)}]" if context else line)


def level_for(verbosity: int, *, default: int = logging.WARNING) -> int:
    """``-v`` is INFO, ``-vv`` (or more) DEBUG; none is ``default``."""
    if verbosity >= 2:
        return logging.DEBUG
    return logging.INFO if verbosity == 1 else default


@contextmanager
def logging_to(
    stream: TextIO, level: int, names: Sequence[str] | None = None
) -> Iterator[logging.Handler]:
    """While inside, a handler on the ``names`` loggers (``regiment`` and the SDKs') writes
    records of ``level`` and above to ``stream``; their levels and handlers are put back."""
    names = ("regiment", *SDK_LOGGERS) if names is None else names
    handler = logging.StreamHandler(stream)
    form = "%(asctime)s %(levelname)s %(name)s: %(message)s"
    handler.setFormatter(ContextFormatter(form, sdk_tracebacks=level <= logging.DEBUG))
    handler.addFilter(RunContextFilter())  # an SDK's retry names the run and step it is in
    loggers = [logging.getLogger(name) for name in names]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.addHandler(handler)
        floor = _FLOORS.get(logger.name, level) if level > logging.DEBUG else level
        logger.setLevel(max(level, floor))
    try:
        yield handler
    finally:
        for logger, old in zip(loggers, levels, strict=True):
            logger.removeHandler(handler)
            logger.setLevel(old)
