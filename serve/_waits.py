"""A ``?wait=true`` request's wait for its run's end, wherever the run runs.

A run this process drives is waited for on its record (``Runs.wait``). A run another
process runs (one sharing the journal: a keyed retry of a post that process took, or a
run it took over from this one) tells this process nothing as it goes, so its status is
read from the journal every ``POLL`` s until it no longer goes on (ended; paused, once its
pause's ``RunCompleted`` is journaled; or stalled: its process stopped, see ``going``), or
this process runs it now (a resume here), or the
client hangs up: that ends the wait, never the run (it is not this process's to cancel).
An events stream follows such a run at the same pace (``polled``, see ``_follow``).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, MutableMapping

import anyio

from regiment.hierarchy import RunCompleted, RunFailed
from regiment.journal import Journal, RunInfo

from ._journaled import absorb
from ._registry import RunRecord
from ._service import Service

__all__ = ("POLL", "at_end", "going", "newer", "polled", "waited")

log = logging.getLogger("regiment.serve")

POLL = 0.5
"""Seconds between two reads of the status of a run another process runs, while a
``?wait=true`` request waits for it, or a follower of its events stream follows it (two
light queries each: its listing, and its records since the last read)."""

Receive = Callable[[], Awaitable[MutableMapping[str, object]]]


async def waited(s: Service, record: RunRecord, receive: Receive, *, cancels: bool) -> RunRecord:
    """The run of ``record`` once it has ended (or paused, or stalled), or as it is once the
    request's client has left (``cancels``: that cancels a run this process drives)."""
    runs = s.live()
    await runs.wait(record, receive, cancels=cancels)
    latest = await s.latest(record)
    while _elsewhere(s, latest) and await _watched(s, latest, receive):
        latest = await s.find(latest.run_id) or latest
        await runs.wait(latest, receive, cancels=False)  # resumed here since: not this post's
        latest = await s.latest(latest)
    return latest


async def polled(s: Service, journal: Journal, run_id: str) -> RunInfo | None:
    """One look at a run another process runs, ``POLL`` s after the last one: its listing in
    the journal, or ``None`` if this process runs it now (or is resuming it)."""
    await anyio.sleep(POLL)
    info = await journal.get_run(run_id)
    resuming = s.runs is not None and s.runs.resuming(run_id) is not None
    return None if resuming or s.store.get(run_id) is not None else info


def going(record: RunRecord, status: str | None = None) -> bool:
    """Whether the journal's ``record`` is of a run that goes on (as of ``status``, the
    journal's listing of it, if given): ``running`` (until its lease runs out: the journal
    then says ``stalled``), or ``paused`` before its pause's ``RunCompleted`` (the journal
    lists a run ``paused`` as soon as a step asks for an approval, while its other steps
    still work)."""
    status = record.status if status is None else status
    return status == "running" or (status == "paused" and not at_end(record))


def at_end(record: RunRecord) -> bool:
    """Whether ``record``'s events so far end with its run's end (or pause)."""
    return bool(record.events) and isinstance(record.events[-1], RunCompleted | RunFailed)


async def newer(journal: Journal, record: RunRecord, info: RunInfo) -> bool:
    """``record`` (the journal's view of a run) with the records its journal got since, as
    listed (``info``) just before: whether the run still goes on (see ``going``)."""
    if info.status in ("running", "paused"):
        absorb(record, await journal.read(record.run_id, after=record.read_to))
    return going(record, info.status)


def _elsewhere(s: Service, record: RunRecord) -> bool:
    """Whether ``record`` is the journal's view of a run another process runs now."""
    return (
        s.journal is not None
        and going(record)
        and s.store.get(record.run_id) is not record
        and (s.runs is None or s.runs.resuming(record.run_id) is None)
    )


async def _watched(s: Service, record: RunRecord, receive: Receive) -> bool:
    """Poll the journal until the run of ``record`` (the journal's view) does not go on
    elsewhere any more: ``True``; or until the client hangs up: ``False``."""
    assert s.journal is not None
    journal, left, run_id = s.journal, False, record.run_id
    log.debug("a request waits for a run another process runs", extra={"run_id": run_id})
    async with anyio.create_task_group() as tg:

        async def hang_up() -> None:
            nonlocal left
            while (await receive())["type"] != "http.disconnect":
                pass
            left = True
            tg.cancel_scope.cancel()

        tg.start_soon(hang_up)
        while not left:
            info = await polled(s, journal, run_id)
            if info is None or not await newer(journal, record, info):
                break
        tg.cancel_scope.cancel()
    if left:
        log.debug("a waiting request's client left; the run goes on", extra={"run_id": run_id})
    return not left
