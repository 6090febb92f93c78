"""A live run's progress (``TextDelta``, ``ToolCallStarted``, ``ToolCallFinished``) for
the followers that ask for it, ``GET /runs/{id}/events?live=true``.

Progress is not journaled and not numbered (event n must stay event n across a restart),
so it is not in ``RunRecord.events``: each follower that asks has a ``LiveTap`` on the
run's record, which ``tell_live`` fills, and ``follow_live`` gives the numbered events
and the progress in the order they came. A follower that reads slowly holds a call's
text, not each piece of it: past ``LAG`` waiting items, a delta joins the call's one
still waiting (as ``RunningTeam.stream`` does for its reader)."""

from __future__ import annotations

from collections import deque
from collections.abc import AsyncIterator
from typing import final

import anyio
import msgspec

from regiment.hierarchy import (
    Event,
    OpenEnds,
    RunCompleted,
    RunFailed,
    TextDelta,
    ToolCallFinished,
)

from ._registry import RunRecord, RunStore

__all__ = ("LAG", "LiveTap", "follow_live", "tell_ends", "tell_live")

LAG = 256
"""Items waiting for a follower before its text deltas are joined per call."""


@final
class _Item:
    """One progress event for a follower, told after numbered event ``at``."""

    __slots__ = ("at", "event", "parts")

    def __init__(self, at: int, event: Event) -> None:
        self.at = at
        self.event = event
        self.parts: list[str] | None = None  # more text that joined a waiting delta

    def joins(self, at: int, event: Event) -> bool:
        """Whether ``event`` (more text of the same call) can join this waiting delta."""
        mine = self.event
        return (
            isinstance(event, TextDelta)
            and isinstance(mine, TextDelta)
            and self.at == at
            and not (event.void or event.refused or mine.void or mine.refused)
            and (mine.run_id, mine.role, mine.worker, mine.step_id, mine.call)
            == (event.run_id, event.role, event.worker, event.step_id, event.call)
        )

    def taken(self) -> Event:
        if self.parts is None or not isinstance(self.event, TextDelta):
            return self.event
        return msgspec.structs.replace(self.event, text=self.event.text + "".join(self.parts))


@final
class LiveTap:
    """What one follower has not read yet of a run's progress."""

    __slots__ = ("items",)

    def __init__(self) -> None:
        self.items: deque[_Item] = deque()

    def add(self, at: int, event: Event) -> None:
        last = self.items[-1] if self.items else None
        if len(self.items) >= LAG and last is not None and last.joins(at, event):
            assert isinstance(event, TextDelta)
            if last.parts is None:
                last.parts = []
            last.parts.append(event.text)
            return
        self.items.append(_Item(at, event))


def tell_live(record: RunRecord, event: Event) -> None:
    """``event``, a live run's progress, to each follower that asked for it (after the
    numbered events recorded so far); nothing is kept when no one follows it live."""
    if not record.taps:
        return
    at = len(record.events)
    for tap in record.taps:
        tap.add(at, event)
    record.changed.set()
    record.changed = anyio.Event()


def tell_ends(
    record: RunRecord, store: RunStore, opened: OpenEnds | None, last: Event | None
) -> None:
    """The ends of the tool calls and steps a cancel cut (``opened``: what the run began,
    for a stream that was left: the run told it no end; ``None`` if the stream was not
    left), from its last event's step reports: a call's to the live followers, a step's
    numbered (the journal's view of the run has them too, ``_journaled``), before
    ``last``; nothing once the run has ended."""
    if opened is None or record.ended.is_set():
        return
    closing = last if isinstance(last, RunCompleted | RunFailed) else None
    for end in opened.ends(closing):
        if isinstance(end, ToolCallFinished):
            tell_live(record, end)
        else:
            store.append(record.run_id, end)


async def follow_live(
    record: RunRecord, after: int, tap: LiveTap
) -> AsyncIterator[tuple[int | None, Event]]:
    """The run's events numbered above ``after`` and, from now on, its progress (number
    ``None``, through ``tap``), in the order they came, to the run's end. The tap is the
    run's until the follower's response is done (``record.taps.discard(tap)``): the SSE
    response does not close the generator of a client that hung up, which held the tap
    (and the progress it gathered) for as long as the run went on."""
    record.taps.add(tap)
    try:
        seq = after
        while True:
            while True:
                head = tap.items[0] if tap.items else None
                if head is not None and head.at <= seq:
                    tap.items.popleft()
                    yield None, head.taken()
                elif seq < len(record.events):
                    seq += 1
                    yield seq, record.events[seq - 1]
                else:
                    break
            if record.ended.is_set():
                return
            await record.changed.wait()
    finally:
        record.taps.discard(tap)
