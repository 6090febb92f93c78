"""Runs started by the app: each one a task of the app's lifespan task group.

Every run is driven by ``running.stream(goal)`` (or ``running.resume_stream(run_id)``)
inside its own cancel scope, so ``cancel`` (a ``POST .../cancel``, or a ``?wait=true``
client that left) stops exactly that run, and the app's shutdown stops them all.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable, Callable, MutableMapping
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import final

import anyio
import msgspec
from anyio.abc import TaskGroup, TaskStatus

from regiment._json import JsonValue
from regiment.errors import LeaseHeld, LeaseLost, RegimentError
from regiment.hierarchy import (
    Event,
    JournaledEvents,
    OpenEnds,
    RunCompleted,
    RunEvents,
    RunFailed,
    RunningTeam,
    RunStarted,
    Team,
    TextDelta,
    ToolCallFinished,
    ToolCallStarted,
    stopped_resumably,
)
from regiment.journal import Journal, RunCreated, describe_owner

from ._live import tell_ends, tell_live
from ._registry import RunRecord, RunStore, cancelled

__all__ = ("Resuming", "Runs", "open_runs")

log = logging.getLogger("regiment.serve")


@final
class Resuming:
    """A resume of this service's that is still starting (its lease's write may wait for
    the journal a long while): ``record`` is the run as its journal had it, ``running``
    here (``None`` until its history is read); ``started`` is set once the resumed run
    has registered (its record is in the store) or the resume failed."""

    __slots__ = ("record", "started")

    def __init__(self) -> None:
        self.record: RunRecord | None = None
        self.started = anyio.Event()

    def read(self, run_id: str, history: JournaledEvents) -> str | None:
        """The run's journal is read (``history``): its ``record`` is the run as it has it;
        the run's session (the one it was started with, in its first record)."""
        firsts = (e.record for e in history.entries if isinstance(e.record, RunCreated))
        if (created := next(firsts, None)) is None:
            return None  # the journal has no such run: the resume says so
        self.record = RunRecord(run_id, created.goal, created.session)
        self.record.events.extend(history.events)  # what GET /runs/{id} answers meanwhile
        log.debug("run resuming: its journal read", extra={"run_id": run_id})
        return created.session


@final
class Runs:
    """The started team, the store, and one cancel scope per live run."""

    def __init__(self, running: RunningTeam, store: RunStore, tg: TaskGroup) -> None:
        self.running = running
        self.store = store
        self._tg = tg
        self._scopes: dict[str, anyio.CancelScope] = {}
        self._resuming: dict[str, Resuming] = {}  # resumes still starting
        self._cancel_asked: set[str] = set()  # of those, the ones cancelled as they start
        self._waiters: dict[str, list[anyio.CancelScope]] = {}
        self._readers: dict[str, RunEvents] = {}  # each live run's stream (its ``ending``)
        self.stopping = False  # the server stops: no run starts any more

    async def start(
        self, goal: str, session: str | None, deps: dict[str, JsonValue] | None, run_id: str | None
    ) -> RunRecord:
        """Start a run of ``goal`` (``deps``: the run's, read by tools as ``ctx.deps``; ``run_id``:
        its id, else a new one); returns once its id is known (its ``RunStarted``)."""

        def stream() -> AbstractAsyncContextManager[RunEvents]:
            return self.running.stream(goal, session=session, deps=deps, run_id=run_id)

        record: RunRecord = await self._tg.start(self._drive, stream, session, NEW)
        return record

    async def resume(self, run_id: str, *, follow: str = "") -> RunRecord:
        """Resume the journaled run ``run_id`` (``RunningTeam.resume_stream``); returns once
        it has started again.

        Its record starts with the events the journal has (a paused run's ends with
        its ``RunCompleted``, status ``paused``), under the numbers they had, and goes
        on with the events the resumed run adds: the numbers are the journal's, so a
        client's ``Last-Event-ID`` stays good, live and after a restart.

        Raises:
            ConfigError, LeaseHeld, JournalError: as ``RunningTeam.resume`` does; ``LeaseHeld``
                also when this service runs or is resuming the run already (its message
                says to follow it at ``follow``: the events route, as a client reaches it).
        """
        if run_id in self._resuming or (run_id in self._scopes and not _ended(self.store, run_id)):
            events = follow or f"/runs/{run_id}/events"
            raise LeaseHeld(
                f"run {run_id!r} is running in this service already: follow it with GET {events}"
            )
        self._resuming[run_id] = starting = Resuming()
        log.info("run resuming", extra={"run_id": run_id})
        try:
            journal = self.running.journal
            history = NEW if journal is None else await JournaledEvents.read(journal, run_id)

            def stream() -> AbstractAsyncContextManager[RunEvents]:
                return self.running.resume_stream(run_id, journaled=history)  # read once, here

            session = starting.read(run_id, history)
            record: RunRecord = await self._tg.start(self._drive, stream, session, history)
        finally:
            del self._resuming[run_id]
            self._cancel_asked.discard(run_id)
            starting.started.set()
        return record

    def resuming(self, run_id: str) -> Resuming | None:
        """This service's resume of ``run_id`` while it is starting; ``None`` if none is."""
        return self._resuming.get(run_id)

    def resumes(self) -> list[RunRecord]:
        """The runs whose resume is starting (see ``Resuming``), the latest first."""
        return [r.record for r in reversed(self._resuming.values()) if r.record is not None]

    def cancel(self, run_id: str) -> bool:
        """Cancel a live run, or one whose resume is starting (it is cancelled as it
        registers); ``False`` if it is unknown or already over, or its end has come and is
        being journaled (``closing``): a cancel then changes nothing, the run ends as it did."""
        scope = self._scopes.get(run_id)
        if scope is None:
            if run_id not in self._resuming:
                return False
            self._cancel_asked.add(run_id)  # else the run went on, the cancel answered 202
            return True
        if self.closing(run_id) is not None:  # it answered true, and the run ended completed
            return False
        scope.cancel()
        return True

    def closing(self, run_id: str) -> RunCompleted | RunFailed | None:
        """The last event of a live run here that has ended and is closing (its stream commits
        its end to the journal, then lets its lease go); ``None`` if it has not ended."""
        reader = self._readers.get(run_id)
        return None if reader is None else reader.ending

    def cancel_all(self) -> int:
        """Cancel every live run (the server is stopping), and any run still starting as
        it registers; how many there were."""
        self.stopping = True
        scopes = list(self._scopes.values())
        for scope in scopes:
            scope.cancel()
        return len(scopes)

    async def wait(
        self, record: RunRecord, receive: Callable[[], Awaitable[MutableMapping[str, object]]], /,
        cancels: bool = True,
    ) -> None:  # fmt: skip
        """Wait for the end of ``record``'s run, reading the request (``receive``) meanwhile;
        if its client leaves first, cancel the run (if it ``cancels``) and return. Waited in
        the caller's task (the run's drive task cuts it as the run ends): no task of its own.
        """
        if record.ended.is_set() or record.run_id not in self._scopes:
            return  # over already: nothing to wait for
        with anyio.CancelScope() as waiting:
            self._waiters.setdefault(record.run_id, []).append(waiting)
            while (await receive())["type"] != "http.disconnect":
                pass
            _ = cancels and self.cancel(record.run_id)  # its client left before it ended

    async def _drive(
        self,
        stream: Callable[[], AbstractAsyncContextManager[RunEvents]],
        session: str | None,
        history: JournaledEvents,
        *,
        task_status: TaskStatus[RunRecord],
    ) -> None:
        record: RunRecord | None = None  # a resumed run's starts with its journaled events
        last: Event | None = None  # the run's end, told once its journal has it
        reader: RunEvents | None = None  # its ending, once the stream has closed
        opened = OpenEnds()  # what it began: a stream left (a cancel) is told no end
        try:
            with anyio.CancelScope() as scope:
                async with stream() as reader:
                    async for event in reader:
                        if record is None:
                            record = self._started(event, session, history, scope)
                            self._readers[record.run_id] = reader
                            task_status.started(record)
                        opened.see(event)
                        # Live progress is not journaled: the n-th event must be the same
                        # after a restart. A resumed run's replayed events are there already.
                        if isinstance(event, _LIVE):  # to who follows it live (?live=true)
                            tell_live(record, event)
                            continue
                        if history.is_replay(event):
                            continue
                        if isinstance(event, _LAST):  # held until the stream has closed,
                            last = event  # which commits the run's end to its journal
                            continue
                        self.store.append(record.run_id, event)
        except RegimentError as exc:
            if record is None:
                raise  # before it started: the POST answers with the error
            if (owner := _new_owner(exc)) is not None:
                self._taken_over(record, owner, reader)
            elif last is not None:  # e.g. its journal failed as the run closed
                closing = "run ended, then failed while closing (its result stands): %s"
                log.warning(closing, exc, extra={"run_id": record.run_id})
            else:
                log.warning("run failed: %s", exc, extra={"run_id": record.run_id})
                _fail(self.store, record, exc)
        except Exception as exc:  # not the run's failure: the store's, or a bug
            if record is None:
                raise  # before it started: the POST answers 500
            # One run's trouble must not end the app's task group (every run).
            log.error(
                "run ended: the service failed while driving it (%s: %s); "
                "the run was cancelled, the service goes on",
                type(exc).__name__,
                exc,
                exc_info=True,
                extra={"run_id": record.run_id},
            )
            _fail(self.store, record, exc)
        finally:  # also when the app's shutdown cancels every run
            if record is not None:
                self._end(record, last or _unread(reader), None if last else opened)

    def _started(
        self, event: Event, session: str | None, history: JournaledEvents, scope: anyio.CancelScope
    ) -> RunRecord:
        """The run's first event came (its ``RunStarted``): record the run (a resumed run's
        with its journaled events) and hold its cancel scope."""
        assert isinstance(event, RunStarted), event
        record = self.store.add(event.run_id, event.goal, session)
        record.events.extend(history.events)
        self._scopes[record.run_id] = scope
        if self.stopping or record.run_id in self._cancel_asked:  # cancelled as it started
            scope.cancel()
        log.info("run started", extra={"run_id": record.run_id})
        return record

    def _end(self, record: RunRecord, last: Event | None, opened: OpenEnds | None) -> None:
        """The run's stream has closed: tell its last event (now who waits is answered,
        and followers told), or, if it had none, that it was cancelled."""
        self._scopes.pop(record.run_id, None)
        self._readers.pop(record.run_id, None)
        tell_ends(record, self.store, opened, last)  # a stream left: what it cut
        if last is not None and not record.ended.is_set():
            self.store.append(record.run_id, last)
            if stopped_resumably(last, journaled=self.running.journal is not None):
                record.status = "stalled"  # as the journal lists it: a resume finishes it
        if not record.ended.is_set():  # the stream ended without its last event
            self.store.append(record.run_id, cancelled(record.run_id))
            log.info("run cancelled", extra={"run_id": record.run_id})
        self._release(record.run_id)

    def _taken_over(self, record: RunRecord, owner: str, reader: RunEvents | None) -> None:
        """Another process took the run over (its lease ran out while this one was frozen):
        say so, end the record with it (and with what the run got to, as the engine's
        ending has it), and leave the run to the journal's view."""
        message = (
            f"run {record.run_id} was taken over by another process, {describe_owner(owner)}, "
            "which runs it now (this process's lease ran out: it was stopped or too slow to "
            "renew it); this service stopped working on it and kept nothing it did after "
            f"that; GET /runs/{record.run_id} reads it from the journal"
        )
        log.warning("%s", message, extra={"run_id": record.run_id})
        ending = None if reader is None else reader.ending
        taken = (
            msgspec.structs.replace(ending, error_type="LeaseLost", message=message)
            if isinstance(ending, RunFailed)
            else RunFailed(run_id=record.run_id, error_type="LeaseLost", message=message)
        )
        _fail(self.store, record, taken)
        record.taken_over = owner

    def _release(self, run_id: str) -> None:
        """The run is over: end the waits of its requests (see ``wait``)."""
        for waiting in self._waiters.pop(run_id, ()):
            waiting.cancel()


def _fail(store: RunStore, record: RunRecord, exc: Exception | RunFailed) -> None:
    """End ``record``'s run as failed with ``exc`` (or that ``RunFailed``): through
    ``store``, or, if the store cannot append, on the record itself (its waiters and
    followers see the end)."""
    if record.ended.is_set():
        return
    failed = (
        exc
        if isinstance(exc, RunFailed)
        else RunFailed(run_id=record.run_id, error_type=type(exc).__name__, message=str(exc))
    )
    try:
        store.append(record.run_id, failed)
    except Exception as unstored:  # the store may be what failed
        log.warning(
            "the run store could not record the run's end (%s: %s); ended on its record",
            type(unstored).__name__,
            unstored,
            extra={"run_id": record.run_id},
        )
    if not record.ended.is_set():
        record.status, record.error = "failed", f"{failed.error_type}: {failed.message}"
        record.ended.set()
        record.changed.set()


def _ended(store: RunStore, run_id: str) -> bool:
    """Whether the run gave its last event (it may still be closing)."""
    record = store.get(run_id)
    return record is not None and record.ended.is_set()


def _new_owner(exc: BaseException) -> str | None:
    """The owner that took the run over, if ``exc`` (or what caused it) says another did."""
    cause: BaseException | None = exc
    while cause is not None:
        if isinstance(cause, LeaseLost) and cause.owner is not None:
            return cause.owner
        cause = cause.__cause__
    return None


def _unread(reader: RunEvents | None) -> Event | None:
    """The last event of a run whose stream was left before it came (the run was
    cancelled): as clients see it, a ``RunFailed(RunCancelled)`` with what the run got to.

    Left, the stream cancelled the run and waited for it to wind down, so the engine's
    ending is there: a ``RunCompleted`` with status ``cancelled`` (or, had the run ended
    just as it was cancelled, its real end, which the journal has too).
    """
    ending = None if reader is None else reader.ending
    if isinstance(ending, RunCompleted) and ending.result.status == "cancelled":
        return cancelled(ending.run_id, ending.result)
    return ending


NEW = JournaledEvents.none()
"""A new run's history: nothing journaled yet."""

_LAST = (RunCompleted, RunFailed)
"""A run's last event: a ``?wait=true`` request answers with it, so it waits for the
journal (the stream's close commits the run's end and lets its lease go). Told at
once, a service killed in between had answered 'completed' for a run its journal
still listed as running."""

_LIVE = (TextDelta, ToolCallStarted, ToolCallFinished)
"""Live progress events: numbered streams carry the run-state events only (see ``_live``)."""


@asynccontextmanager
async def open_runs(
    team: Team | RunningTeam,
    store: RunStore,
    journal: Journal | None = None,
    lease_ttl: float | None = None,
) -> AsyncIterator[Runs]:
    """Start the team (unless already started; with ``journal``, journaling its runs, each
    leased for ``lease_ttl`` s if given) and own the runs' task group."""
    async with _started(team, journal, lease_ttl) as running, anyio.create_task_group() as tg:
        yield Runs(running, store, tg)
        tg.cancel_scope.cancel()  # shutdown: live runs end cancelled


@asynccontextmanager
async def _started(
    team: Team | RunningTeam, journal: Journal | None, lease_ttl: float | None
) -> AsyncIterator[RunningTeam]:
    if isinstance(team, RunningTeam):
        yield team
        return
    start = (
        team.start(journal=journal)
        if lease_ttl is None
        else team.start(journal=journal, lease_ttl=lease_ttl)
    )
    async with start as running:
        yield running
