"""Hear what a service running in the test's process logs on ``regiment.serve``."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager

import anyio

__all__ = ("hearing",)


class _Said(logging.Handler):
    """Sets ``heard`` once the service logs ``words`` (its requests run in this process)."""

    def __init__(self, words: str, heard: anyio.Event) -> None:
        super().__init__(logging.DEBUG)
        self.words, self.heard = words, heard

    def emit(self, record: logging.LogRecord) -> None:
        if self.words in record.getMessage():
            self.heard.set()


@contextmanager
def hearing(words: str, heard: anyio.Event) -> Iterator[None]:
    """Within the block, ``heard`` is set once ``regiment.serve`` logs ``words`` (at any
    level: the logger is at DEBUG meanwhile)."""
    logger, handler = logging.getLogger("regiment.serve"), _Said(words, heard)
    level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
