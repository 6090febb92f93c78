"""The app's record of its runs: status, numbered events, result.

``RunStore`` is the seam: the in-memory ``MemoryRunStore`` here keeps what this
process saw. With a journal (``create_app(..., journal=...)``) the app answers
about every other run from the journal (see ``_journaled``), so replay survives
a restart. Nothing in it knows about HTTP.
"""

from __future__ import annotations

from collections import deque
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal, Protocol, TypeAlias, final

import anyio

from regiment.errors import ConfigError
from regiment.hierarchy import Event, RunCompleted, RunFailed, RunResult

if TYPE_CHECKING:
    from ._live import LiveTap

__all__ = ("KEEP_ENDED", "MemoryRunStore", "RunRecord", "RunState", "RunStore", "cancelled")

KEEP_ENDED = 1000
"""How many ended runs a ``MemoryRunStore`` keeps by default (``regiment serve --keep-runs``)."""

RunState: TypeAlias = Literal[
    "running", "stalled", "completed", "partial", "cancelled", "paused", "failed"
]
"""``stalled``: a journaled run that is not finished and that no task of this app
drives (it was running when its process stopped; ``regiment resume`` goes on with it)."""


@dataclass
class RunRecord:
    """One run as the app knows it. ``events[i]`` has sequence number ``i + 1``."""

    run_id: str
    goal: str
    session: str | None
    status: RunState = "running"
    events: list[Event] = field(default_factory=list)
    result: RunResult | None = None
    error: str | None = None
    changed: anyio.Event = field(default_factory=anyio.Event)
    ended: anyio.Event = field(default_factory=anyio.Event)
    taken_over: str | None = None
    """The owner (``host:pid:stamp``) that took the run over from this process: the
    journal's view of the run stands, not this record's."""
    taps: set[LiveTap] = field(default_factory=set)
    """The followers of the run's live progress (``GET .../events?live=true``)."""
    notes: list[str] = field(default_factory=list)
    """What of the run's journal could not be read, and why (``GET /runs/{id}``'s ``not_shown``)."""
    deps_hash: str | None = None
    """Read back from the journal: its ``RunCreated.deps_hash`` (``None``: not known)."""
    read_to: int = 0
    """Read back from the journal: the sequence number of the last record read into it."""


def cancelled(run_id: str, got: RunResult | None = None) -> RunFailed:
    """The last event the app streams for a run it cancelled, with what the run got to
    (``got``: the engine's result, status ``cancelled``; without it, nothing).

    The engine ends a run whose stream was left with ``RunCompleted`` (status
    ``cancelled``), but no reader is there to see it; clients see this instead,
    live and (see ``_journaled``) when the run is replayed from the journal.
    """
    reason = "the run was cancelled (POST /runs/{id}/cancel, a client that left, or shutdown)"
    if got is None:  # the run did not wind down in time: its tally never came
        return RunFailed(run_id=run_id, error_type="RunCancelled", message=reason)
    return got.as_failed("RunCancelled", reason)


class RunStore(Protocol):
    """Where the app keeps runs; what a journal-backed store must also do."""

    def add(self, run_id: str, goal: str, session: str | None) -> RunRecord: ...

    def get(self, run_id: str) -> RunRecord | None: ...

    def list(self, status: str | None = None) -> list[RunRecord]:
        """The runs (of ``status``), the one started (or resumed) last first."""
        ...

    def append(self, run_id: str, event: Event) -> int: ...

    def follow(self, run_id: str, after: int) -> AsyncIterator[tuple[int, Event]]: ...


@final
class MemoryRunStore:
    """A ``RunStore`` in this process's memory (runs are forgotten on restart).

    It keeps every live run and the latest ``keep`` ended ones: when one more run
    ends, the one that ended longest ago is forgotten, so a service that runs for
    months holds a bounded number of runs (a finished 1-step run is ~5 kB, a real
    one with its texts more). With a journal the app still answers about every
    forgotten run from the journal.

    Raises:
        ConfigError: ``keep`` is not a whole number, or is below 1.
    """

    def __init__(self, keep: int = KEEP_ENDED) -> None:
        if isinstance(keep, bool) or not isinstance(keep, int) or keep < 1:  # nan: no bound
            raise ConfigError(
                f"keep={keep!r}: keep at least the last ended run (keep >= 1, a whole number)"
            )
        self.keep = keep
        self._runs: dict[str, RunRecord] = {}
        self._ended: deque[str] = deque()  # ended runs' ids, the one that ended first at the left

    def add(self, run_id: str, goal: str, session: str | None) -> RunRecord:
        record = RunRecord(run_id=run_id, goal=goal, session=session)
        if self._runs.pop(run_id, None) is not None and run_id in self._ended:  # resumed:
            self._ended.remove(run_id)  # live again, and listed as the newest
        self._runs[run_id] = record
        return record

    def get(self, run_id: str) -> RunRecord | None:
        return self._runs.get(run_id)

    def list(self, status: str | None = None) -> list[RunRecord]:
        """The runs (of ``status``), the one started (or resumed) last first."""
        runs = reversed(self._runs.values())
        return [r for r in runs if status is None or r.status == status]

    def append(self, run_id: str, event: Event) -> int:
        """Record ``event``; a terminal one ends the run. Returns its sequence number."""
        record = self._runs[run_id]
        record.events.append(event)
        if isinstance(event, RunCompleted):
            record.result = event.result
            record.status = event.result.status
        elif isinstance(event, RunFailed):
            record.error = f"{event.error_type}: {event.message}"
            record.status = "cancelled" if event.error_type == "RunCancelled" else "failed"
        terminal = isinstance(event, RunCompleted | RunFailed)
        first_end = terminal and not record.ended.is_set()
        if terminal:
            record.ended.set()
        record.changed.set()
        record.changed = anyio.Event()
        if first_end:
            self._forget_past(run_id)
        return len(record.events)

    def _forget_past(self, ended: str) -> None:
        """``ended`` has just ended: past ``keep`` ended runs, forget the oldest one.
        (A follower or a waiting request still holds its record and reads it to the end.)"""
        self._ended.append(ended)
        while len(self._ended) > self.keep:
            self._runs.pop(self._ended.popleft(), None)

    async def follow(self, run_id: str, after: int) -> AsyncIterator[tuple[int, Event]]:
        """Events numbered above ``after``: the recorded ones, then live ones, to the end."""
        record = self._runs[run_id]
        seq = after
        while True:
            while seq < len(record.events):
                seq += 1
                yield seq, record.events[seq - 1]
            if record.ended.is_set():
                return
            await record.changed.wait()
