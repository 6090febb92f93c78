"""The approval desk's requests, by run, with a bound on what ended runs leave behind.

A request lives here while its run is live in this process. When the run ends, its
decided requests go (the run has what it needs, and a journal keeps the record), and
so do its undecided ones when the team has a journal (a resume reads them from it).
Without a journal, the undecided requests of the latest ``keep`` ended runs stay, so
``RunningTeam.pending_approvals()`` still lists a paused run's requests (and
``approve`` can say why it cannot go on); the run that ended first is forgotten past
that, so a long-lived team holds a bounded number of them.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, final

if TYPE_CHECKING:
    import anyio

    from regiment.tools import ApprovalDecision, ApprovalRequest, Tool

__all__ = ("KEEP_ENDED_RUNS", "Entries", "Pending")

KEEP_ENDED_RUNS = 1_000  # ended runs whose undecided requests are kept (no journal)


@dataclass(slots=True)
class Pending:
    """One request on the desk and what became of it."""

    request: ApprovalRequest
    tool: Tool[..., object] | None
    decision: ApprovalDecision | None = None
    by: str = ""
    ready: anyio.Event | None = None  # set while a worker waits on it
    journaled: bool = False  # the decision is in the journal already
    started: float = 0.0  # when the call began to wait (monotonic)
    told: bool = False  # the decision reached the run's planner with ``settle``
    deciding: anyio.Event | None = None  # set while a decision is being recorded
    at: tuple[str, int, str] | None = None  # the step (maybe nested) that waits on it now


@final
class Entries:
    """The requests by id, and the ids of each top-level run's requests."""

    def __init__(self, keep: int = KEEP_ENDED_RUNS) -> None:
        self._keep = keep
        self._all: dict[str, Pending] = {}
        self._runs: dict[str, dict[str, None]] = {}  # run id -> its request ids, in order
        self._ended: dict[str, None] = {}  # ended runs with requests kept, oldest first

    def __len__(self) -> int:
        return len(self._all)

    def get(self, request_id: str) -> Pending | None:
        """The entry of ``request_id``, if the desk holds it."""
        return self._all.get(request_id)

    def add(self, entry: Pending) -> Pending:
        """Hold ``entry`` under its request's id and its run."""
        request = entry.request
        self._all[request.request_id] = entry
        self._runs.setdefault(request.run_id, {})[request.request_id] = None
        return entry

    def values(self) -> Iterator[Pending]:
        """Every entry, oldest first."""
        return iter(tuple(self._all.values()))

    def live_again(self, run_id: str) -> None:
        """``run_id`` runs again (a resume in this process): its requests are its own again."""
        self._ended.pop(run_id, None)

    def drop(self, request_id: str) -> None:
        """Forget one request (decided for a run that is not live here)."""
        entry = self._all.pop(request_id, None)
        if entry is not None:
            ids = self._runs.get(entry.request.run_id)
            if ids is not None:
                ids.pop(request_id, None)
                if not ids:
                    del self._runs[entry.request.run_id]
                    self._ended.pop(entry.request.run_id, None)

    def end_run(self, run_id: str, *, keep_undecided: bool) -> None:
        """``run_id`` ended: forget its requests but those being decided and, with
        ``keep_undecided``, those still undecided (for the latest ``keep`` ended runs)."""
        kept = self._forget(run_id, keep_undecided=keep_undecided)
        if not kept:
            return
        self._ended[run_id] = None
        while len(self._ended) > self._keep:
            oldest = next(iter(self._ended))
            del self._ended[oldest]
            self._forget(oldest, keep_undecided=False)

    def _forget(self, run_id: str, *, keep_undecided: bool) -> bool:
        """Drop ``run_id``'s requests but the ones to keep; whether any are kept."""
        ids = self._runs.pop(run_id, None) or {}
        kept: dict[str, None] = {}
        for request_id in ids:
            entry = self._all.get(request_id)
            if entry is None:
                continue
            if entry.deciding is not None or (keep_undecided and entry.decision is None):
                kept[request_id] = None
            else:
                del self._all[request_id]
        if kept:
            self._runs[run_id] = kept
        return bool(kept)
