"""What ``GET /runs/{id}/events`` streams: a run's numbered events (and, asked for, its
live progress), from this process's record or read back from the journal, and, for a
run another process runs, from the journal as that process journals them."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from typing import final

import anyio
from sse_starlette import ServerSentEvent

from regiment.hierarchy import Event

from ._journaled import journaled_first, replay, unfinished
from ._live import LiveTap, follow_live
from ._polls import Watch, at_end, going
from ._registry import RunRecord
from ._service import Service

__all__ = ("Following",)

log = logging.getLogger("regiment.serve")


@final
class Following:
    """One follower's stream of ``record``'s run (``tap``: its live progress, if asked for).

    After ``events``, ``record`` is the record the stream ended on and ``live`` whether
    this process drove it (else the journal's view, which may end before the run does:
    the run paused, or stalled)."""

    __slots__ = ("failed", "here", "live", "progress", "record", "s", "tap", "watch")

    def __init__(self, s: Service, record: RunRecord, tap: LiveTap, *, progress: bool) -> None:
        self.s = s
        self.record = record
        self.tap = tap
        self.progress = progress
        self.live = False
        self.here = False  # a run followed in the journal that this process runs since
        self.failed: str | None = None  # what the journal raised as it was followed there
        self.watch: Watch | None = None  # the journal's reads of it, shared, as it is followed

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
        if not self.live:  # read back from the journal (as it gets them, if it runs elsewhere)
            journaled = self._journaled(last) if self._elsewhere() else replay(record, last)
            async for seq, event in journaled:
                last = seq
                yield seq, event
            if self.here:  # this process resumed it meanwhile: followed live from here on
                self.here, self.record = False, await s.find(run_id, as_followed=True) or record
                async for item in self.events(last):
                    yield item
            return
        follow = s.store.follow(run_id, last)
        events = follow_live(record, last, self.tap) if self.progress else follow
        if s.journal is not None:  # a Last-Event-ID names an event a kill leaves
            events = journaled_first(events, s.journal)
        async for item in events:
            yield item

    def _elsewhere(self) -> bool:
        """Whether the journal's ``record`` is of a run another process runs now (not the
        run of a nested team in a run this process runs: its top run's stream has it)."""
        record, s = self.record, self.s
        return s.watches is not None and going(record) and s.top_here(record.run_id) is None

    async def _journaled(self, last: int) -> AsyncIterator[tuple[int, Event]]:
        """The events above ``last`` of a run another process runs: those the journal has,
        then each as its journal gets it, read every ``POLL`` s by the run's ``Watch`` (one
        for all its followers and waits here), to the run's end, pause or stall (``record``
        is then the journal's view of it, in one read, so its end is streamed as a replay
        streams it), or until this process runs it (``here``)."""
        s, record = self.s, self.record
        assert s.watches is not None
        log.debug("a follower follows a run another process runs", extra={"run_id": record.run_id})
        watch = self.watch = s.watches.join(record)
        seen = record
        try:
            while True:  # what it read first, then what the watch has read since
                seen = watch.record if len(watch.record.events) > len(record.events) else record
                # Its last event, if its end, waits for the status that says how it ended
                # (a cancelled run's RunCompleted is streamed as the RunFailed it ended with).
                ends = at_end(seen)
                for seq in range(last + 1, len(seen.events) + (0 if ends else 1)):
                    last = seq
                    yield seq, seen.events[seq - 1]
                if watch.over:
                    break
                await watch.changed.wait()
        except anyio.get_cancelled_exc_class():
            log.debug(
                "a follower of a run another process runs left; the run goes on",
                extra={"run_id": record.run_id},
            )
            raise
        finally:
            self._leave()
        if watch.final is None:  # the journal failed (or the app stops): the events it was
            self.record = _sent(seen, last)  # sent, no more (its Last-Event-ID)
            self.here = watch.here
            if watch.failed is not None:  # down, say: the stream ends saying so (a StreamEnd)
                self._failed(watch.failed)
            return
        self.record = watch.final
        async for seq, event in replay(self.record, last):
            yield seq, event

    def _failed(self, exc: Exception) -> None:
        self.failed = type(exc).__name__
        log.warning(
            "run %s: reading the journal failed (%s) while a follower followed the run, "
            "which another process runs; the follower was told to reconnect",
            self.record.run_id,
            self.failed,
            extra={"run_id": self.record.run_id},
        )

    def _leave(self) -> None:
        """Done with the run's ``Watch`` (once; also when the client hung up, see ``done``)."""
        if self.watch is not None and self.s.watches is not None:
            self.s.watches.leave(self.watch)
        self.watch = None

    def end(self, root: str) -> ServerSentEvent | None:
        """The ``StreamEnd`` frame, once ``events`` is over, of a stream that ended before
        its run did (``None`` if it ended with its run's end, or this process drove it)."""
        if self.live:
            return None
        top = self.s.top_here(self.record.run_id)
        return unfinished(self.record, root, top, failed=self.failed)

    def done(self) -> None:
        """The response is over (also when the client hung up, its generator left open)."""
        self.record.taps.discard(self.tap)
        self._leave()


def _sent(record: RunRecord, last: int) -> RunRecord:
    """``record`` with the events a follower was sent (up to ``last``), no more."""
    return RunRecord(
        record.run_id, record.goal, record.session, record.status, record.events[:last]
    )
