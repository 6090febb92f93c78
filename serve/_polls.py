"""One read of the journal a run, for all of this service's followers and waits of it.

A run another process runs (one sharing the journal) tells this process nothing as it
goes: its status and its new records are read from the journal every ``POLL`` s. One
``Watch`` of the run does that for every follower of its events stream and every
``?wait=true`` request waiting for it here: the first to come starts it (a task of the
app's lifespan), the last to leave stops it, and one that leaves (its client hung up)
leaves the others be. It stops by itself once the run no longer goes on elsewhere
(``final``: the journal's view of it then, read once for all), or this process runs it
now (``here``: a resume here), or the journal could not be read (``failed``).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import final

import anyio
from anyio.abc import TaskGroup

from regiment.errors import JournalError
from regiment.hierarchy import RunCompleted, RunFailed
from regiment.journal import Journal, RunInfo

from ._journaled import absorb, journaled_record
from ._registry import RunRecord

__all__ = ("POLL", "READS", "Watch", "Watches", "at_end", "going", "newer", "open_watches")

log = logging.getLogger("regiment.serve")

POLL = 0.5
"""Seconds between two reads of a run another process runs, while a ``?wait=true``
request waits for it or a follower of its events stream follows it here (two light
queries, whatever their number: its listing, and its records since the last read)."""

READS = "the journal is read for a run another process runs, for its followers and waits here"
"""Logged (DEBUG) as a ``Watch`` starts: once for all the followers and waits of a run."""


def going(record: RunRecord, status: str | None = None) -> bool:
    """Whether the journal's ``record`` is of a run that goes on (as of ``status``, the
    journal's listing of it, if given): ``running`` (until its lease runs out: the journal
    then says ``stalled``), or ``paused`` before its pause's ``RunCompleted`` (the journal
    lists a run ``paused`` as soon as a step asks for an approval, while its other steps
    still work; ``stalled`` if its process dies before it gets to its pause)."""
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


@final
class Watch:
    """The journal's view of one run another process runs, read every ``POLL`` s.

    ``record`` gets the run's records as they are read (``changed`` is set, and replaced,
    after each read); once ``over``, the reading has stopped, and ``final``, ``here`` or
    ``failed`` says why (none of them: the app is stopping)."""

    __slots__ = ("changed", "failed", "final", "here", "over", "record", "scope", "users")

    def __init__(self, record: RunRecord) -> None:
        self.record = record
        self.changed = anyio.Event()
        self.over = self.here = False
        self.final: RunRecord | None = None
        self.failed: Exception | None = None
        self.users = 0
        self.scope = anyio.CancelScope()

    def told(self) -> None:
        """Wake who waits for the next read (``changed``)."""
        self.changed.set()
        self.changed = anyio.Event()


@final
class Watches:
    """The watches of this service (see ``Watch``), one a run, each read by a task of ``tg``
    (``here``: whether this process runs, or is resuming, a run now)."""

    def __init__(self, journal: Journal, here: Callable[[str], bool], tg: TaskGroup) -> None:
        self._journal = journal
        self._here = here
        self._tg = tg
        self._watches: dict[str, Watch] = {}

    def join(self, record: RunRecord) -> Watch:
        """The watch of ``record``'s run (the journal's view of it, as just read), started
        for it if none is; ``leave`` it when done with it."""
        watch = self._watches.get(record.run_id)
        if watch is None:  # its own copy: the first follower's record is its own
            watch = Watch(_copy(record))
            self._watches[record.run_id] = watch
            self._tg.start_soon(self._read, watch)
            log.debug(READS, extra={"run_id": record.run_id})
        watch.users += 1
        return watch

    def leave(self, watch: Watch) -> None:
        """One follower or wait is done with ``watch``: the last one stops its reading."""
        watch.users -= 1
        if watch.users == 0:
            self._forget(watch)
            watch.scope.cancel()

    async def _read(self, watch: Watch) -> None:
        """Read the run every ``POLL`` s until it no longer goes on elsewhere, or the last
        follower has left (or the app stops)."""
        journal, run_id = self._journal, watch.record.run_id
        try:
            with watch.scope:
                while True:
                    await anyio.sleep(POLL)
                    info = await journal.get_run(run_id)
                    if self._here(run_id):
                        watch.here = True
                        break
                    if not await newer(journal, watch.record, info):  # ended, paused, stalled
                        # In one read, so its end is streamed as a replay streams it.
                        watch.final = await journaled_record(journal, run_id) or watch.record
                        break
                    watch.told()
        except JournalError as exc:  # down, say: each follower says so, and logs it
            watch.failed = exc
        except Exception as exc:  # a bug: its followers end, the service (every run) goes on
            log.error(
                "reading run %s's journal failed", run_id, exc_info=True, extra={"run_id": run_id}
            )
            watch.failed = exc
        finally:
            watch.over = True
            self._forget(watch)
            watch.told()

    def _forget(self, watch: Watch) -> None:
        if self._watches.get(watch.record.run_id) is watch:
            del self._watches[watch.record.run_id]


@asynccontextmanager
async def open_watches(
    journal: Journal | None, here: Callable[[str], bool]
) -> AsyncIterator[Watches | None]:
    """The app's watches, for its lifespan (none without a journal): its reads stop with it."""
    if journal is None:
        yield None
        return
    async with anyio.create_task_group() as tg:
        yield Watches(journal, here, tg)
        tg.cancel_scope.cancel()


def _copy(record: RunRecord) -> RunRecord:
    """A record of its own with what ``record`` (the journal's view of a run) has read."""
    return RunRecord(
        run_id=record.run_id,
        goal=record.goal,
        session=record.session,
        status=record.status,
        events=list(record.events),
        result=record.result,
        error=record.error,
        notes=list(record.notes),
        deps_hash=record.deps_hash,
        read_to=record.read_to,
    )
