"""A user's ``RunStore`` for the tests: a memory one that a test's subclass changes a
method of (the store that fails, the store that starts the server's stop)."""

from __future__ import annotations

from collections.abc import AsyncIterator

from regiment.hierarchy import Event
from regiment.serve import MemoryRunStore, RunRecord

__all__ = ("WrappedStore",)


class WrappedStore:
    """Every ``RunStore`` method passed on to a ``MemoryRunStore``."""

    def __init__(self) -> None:
        self.inner = MemoryRunStore()

    def add(self, run_id: str, goal: str, session: str | None) -> RunRecord:
        return self.inner.add(run_id, goal, session)

    def get(self, run_id: str) -> RunRecord | None:
        return self.inner.get(run_id)

    def list(self, status: str | None = None) -> list[RunRecord]:
        return self.inner.list(status)

    def append(self, run_id: str, event: Event) -> int:
        return self.inner.append(run_id, event)

    def follow(self, run_id: str, after: int) -> AsyncIterator[tuple[int, Event]]:
        return self.inner.follow(run_id, after)
