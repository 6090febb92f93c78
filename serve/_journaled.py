"""Runs read back from the journal: what the app answers about a run it did not
start in this process (it ran before a restart, or in another process).

Every event of a journaled run is an ``EventRecorded`` record, in order, so the
n-th of them is the run's event number n, the same number the live stream gave
it: a client's ``Last-Event-ID`` stays good across a restart.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Iterable
from typing import cast

import msgspec
from sse_starlette import ServerSentEvent

from regiment._text import shown
from regiment.errors import UnknownRun
from regiment.hierarchy import Event, OpenEnds, RunCompleted, RunFailed, RunResult
from regiment.journal import (
    Entry,
    EventRecorded,
    Journal,
    RunCreated,
    RunFinished,
    RunInfo,
    RunStatus,
    read_run,
)

from ._registry import RunRecord, cancelled

__all__ = (
    "STREAM_END",
    "absorb",
    "journaled_first",
    "journaled_record",
    "journaled_runs",
    "replay",
    "unfinished",
)

log = logging.getLogger("regiment.serve")

STREAM_END = "StreamEnd"
"""The ``event:`` of the last frame of a run's stream that ends before the run does (no
process of this service runs it): the frame says why, and what to do."""


async def journaled_record(journal: Journal, run_id: str) -> RunRecord | None:
    """The run as the journal has it, or ``None`` if the journal has no such run.

    The record's ``ended`` is set: nothing in this process will add to it.
    """
    try:  # in one snapshot: the status is never older than the records
        info, entries = await read_run(journal, run_id)
    except UnknownRun:  # a journal that fails otherwise is an error, not a 404
        return None
    record = _from_info(info)
    absorb(record, entries)
    _as_streamed(record)
    record.ended.set()
    return record


def absorb(record: RunRecord, entries: Iterable[Entry]) -> None:
    """Add the run's next journal ``entries``, in order, to ``record``: its events and what
    they tell (a follower of a run another process runs reads them so as they come)."""
    for entry in entries:
        record.read_to = entry.seq
        match entry.record:
            case RunCreated(session=session, deps_hash=deps):
                record.session, record.deps_hash = session, deps
            case EventRecorded() as recorded:
                if (event := _readable(record, recorded)) is None:
                    continue
                record.events.append(event)
                if isinstance(event, RunCompleted):  # a paused run's result, say
                    record.result = event.result
                elif isinstance(event, RunFailed):  # its end since (a paused run cancelled)
                    record.result = None
            case RunFinished(error=error, result=result):
                record.error = error
                if result:
                    record.result = msgspec.convert(result, RunResult)
            case _:
                pass  # plans, steps, model calls: the events already tell them


def _readable(record: RunRecord, recorded: EventRecorded) -> Event | None:
    """The event ``recorded`` holds, or ``None`` if this regiment cannot read it (another
    program's, or a newer regiment's kind): left out of ``record``, with a note that says
    so (``GET /runs/{id}``'s ``not_shown``, as ``regiment show`` has it), and logged."""
    try:
        event: Event = msgspec.convert(recorded.event, Event)
    except msgspec.ValidationError as exc:
        seq = len(record.events) + len(record.notes) + 1
        note = (
            f"its journal's event {seq} ({shown(recorded.kind)}) could not be read ({exc}): "
            "another program, or a newer regiment, wrote it; it is left out (the events after "
            "it are numbered without it)"
        )
        record.notes.append(note)
        log.warning("run %s: %s", record.run_id, note, extra={"run_id": record.run_id})
        return None
    return event


def _as_streamed(record: RunRecord) -> None:
    """A cancelled run ends as its live stream ended: with ``RunFailed(RunCancelled)``
    carrying what it got to, and no answer (its view is the one it had live)."""
    if record.status == "cancelled" and record.events:
        last = record.events[-1]
        if isinstance(last, RunCompleted):
            ending = cancelled(record.run_id, last.result)
            # Its cut steps' ends, as its live stream had them (event n stays event n).
            opened = OpenEnds()
            for event in record.events:
                opened.see(event)
            record.events[-1:] = [*opened.ends(ending), ending]
            record.error = f"{ending.error_type}: {ending.message}"
            record.result = None


async def journaled_runs(journal: Journal, status: str | None, limit: int) -> list[RunRecord]:
    """The newest ``limit`` runs in the journal (of ``status``: the service's word for
    it), without their events."""
    asked = cast("RunStatus | None", status)
    infos = await journal.list_runs(status=asked, limit=limit)
    return [r for r in map(_from_info, infos) if status in (None, r.status)]


async def journaled_first(
    events: AsyncIterator[tuple[int | None, Event]], journal: Journal
) -> AsyncIterator[tuple[int | None, Event]]:
    """A live run's stream, each numbered event sent once the journal has committed it.

    The run's records wait in the journal's buffer for a durable one or the heartbeat's
    commit (a second): a service killed meanwhile had sent events the journal never
    got, the resumed run numbered others the same, and a follower reconnecting with the
    ``Last-Event-ID`` it had skipped them. One commit serves a burst of events (the
    first ``flush`` commits them all, the others find nothing waiting).
    """
    async for seq, event in events:
        if seq is not None:
            await journal.flush()
        yield seq, event


async def replay(record: RunRecord, after: int) -> AsyncIterator[tuple[int, Event]]:
    """A journaled run's events numbered above ``after``."""
    for seq in range(after + 1, len(record.events) + 1):
        yield seq, record.events[seq - 1]


def unfinished(
    record: RunRecord, root: str, top: str | None = None, *, failed: str | None = None
) -> ServerSentEvent | None:
    """The ``StreamEnd`` frame (no ``id``) for a run read back from the journal whose events
    stop before its last one (``None`` if they end with it): without it the stream just
    stopped, and a follower could not tell a run nobody runs from a cut connection.
    (``top``: the run's top run, if this is a nested team's run and this process runs it;
    ``failed``: the class of the error the journal raised as the run was followed.)"""
    if record.events and isinstance(record.events[-1], RunCompleted | RunFailed):
        return None
    seen, run_id = len(record.events), record.run_id
    again = f"then GET {root}/runs/{run_id}/events with Last-Event-ID: {seen} for the rest"
    if failed is not None:
        detail = (
            f"this service could not read its journal ({failed}, logged) as it followed run "
            f"{run_id}, which another process runs: once the journal is back, {again}"
        )
    elif record.status == "stalled":
        detail = (
            f"no process runs run {run_id} (it stopped before its end): POST "
            f"{root}/runs/{run_id}/resume finishes it, {again}"
        )
    elif record.status == "running" and top is not None:
        detail = (
            f"run {run_id} is the run of a nested team in run {top}, which this service runs: "
            f"the events it has journaled so far were sent; GET {root}/runs/{top}/events "
            f"follows run {top} live; or wait, {again}"
        )
    elif record.status == "running":
        detail = (
            f"run {run_id} runs in another process that shares this service's journal: "
            f"the events it has journaled so far were sent; wait, {again}"
        )
    else:  # the journal has its end but not its last event (a journal from before it had)
        detail = f"run {run_id} is {record.status}; the journal has no more of its events"
    data = {"run_id": run_id, "status": record.status, "last_event_id": seen, "detail": detail}
    return ServerSentEvent(data=msgspec.json.encode(data).decode(), event=STREAM_END)


def _from_info(info: RunInfo) -> RunRecord:
    # The journal's statuses are the service's (a run waiting for a decision: "paused").
    return RunRecord(run_id=info.run_id, goal=info.goal, session=info.session, status=info.status)
