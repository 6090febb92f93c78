"""Who is told of a journal's commits: see ``BufferedJournal.watch_commits``."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from regiment.errors import JournalError
from regiment.journal._store import LeaseKey, Pending
from regiment.journal._views import Lease

__all__ = ("CommitWatch",)


class CommitWatch:
    """A journal's watchers of its leases' commits (a traced run's step spans wait for
    their reports' commits before they are exported)."""

    _watchers: dict[LeaseKey, Callable[[int], None]] | None = None

    def watch_commits(self, lease: Lease, told: Callable[[int], None] | None) -> None:
        """Call ``told`` (on the committing task) with the sequence number of the last of
        ``lease``'s records each commit wrote, as it succeeded (``None``: no more)."""
        if self._watchers is None:
            self._watchers = {}
        key = (lease.run_id, lease.token)
        if told is None:
            self._watchers.pop(key, None)
        else:
            self._watchers[key] = told

    def _tell_watchers(
        self, records: Iterable[Pending], refused: dict[LeaseKey, JournalError]
    ) -> None:
        watchers = self._watchers
        if not watchers:
            return
        last: dict[LeaseKey, int] = {}
        for pending in records:
            key = (pending.run_id, pending.token)
            if key in watchers and key not in refused:
                last[key] = pending.seq
        for key, seq in last.items():
            watchers[key](seq)
