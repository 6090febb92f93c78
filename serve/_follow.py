"""What ``GET /runs/{id}/events`` streams: a run's numbered events (and, asked for, its
live progress), from this process's record or read back from the journal."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from typing import final

from regiment.hierarchy import Event

from ._journaled import journaled_first, replay
from ._live import LiveTap, follow_live
from ._registry import RunRecord
from ._service import Service

__all__ = ("Following",)

log = logging.getLogger("regiment.serve")


@final
class Following:
    """One follower's stream of ``record``'s run (``tap``: its live progress, if asked for).

    After ``events``, ``record`` is the record the stream ended on and ``live`` whether
    this process drove it (else the journal's view, which may end before the run does)."""

    __slots__ = ("live", "progress", "record", "s", "tap")

    def __init__(self, s: Service, record: RunRecord, tap: LiveTap, *, progress: bool) -> None:
        self.s = s
        self.record = record
        self.tap = tap
        self.progress = progress
        self.live = False

    async def events(self, last: int) -> AsyncIterator[tuple[int | None, Event]]:
        """The run's events numbered above ``last``, to its end (or the journal's)."""
        s, run_id = self.s, self.record.run_id
        starting = None if s.runs is None else s.runs.resuming(run_id)
        if starting is not None:  # its resume is starting: what the journal had first
            # (committed: no flush to wait for, which waited behind the resume's lease
            # write; read by the resume, or, before it had, by this request), then the
            # resumed run live, from there (else a StreamEnd said it was stalled).
            async for seq, event in replay(self.record, last):
                last = seq
                yield seq, event
            log.debug("a follower waits for the run's resume here", extra={"run_id": run_id})
            await starting.started.wait()
            self.record = await s.find(run_id, as_followed=True) or self.record
        record = self.record
        self.live = s.store.get(run_id) is record
        if not self.live:  # read back from the journal
            async for seq, event in replay(record, last):
                yield seq, event
            return
        follow = s.store.follow(run_id, last)
        events = follow_live(record, last, self.tap) if self.progress else follow
        if s.journal is not None:  # a Last-Event-ID names an event a kill leaves
            events = journaled_first(events, s.journal)
        async for item in events:
            yield item

    def done(self) -> None:
        """The response is over (also when the client hung up, its generator left open)."""
        self.record.taps.discard(self.tap)
