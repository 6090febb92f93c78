"""The read side of a journal over any ``Store``: records, listings, keyed look-ups, sessions."""

from __future__ import annotations

import logging
from abc import ABC, abstractmethod
from collections.abc import Callable
from datetime import UTC, datetime
from functools import partial
from typing import Any, TypeVar

import anyio

from regiment._version import __version__
from regiment.errors import JournalError
from regiment.journal._codec import NewerRecord, approval_key, model_key, tool_key
from regiment.journal._patience import reads_wait
from regiment.journal._protocol import Journal
from regiment.journal._records import (
    ApprovalDecided,
    ApprovalRequested,
    ModelCallFinished,
    Record,
    RunFinished,
    StepReported,
    ToolCallFinished,
    ToolCallStarted,
)
from regiment.journal._store import RunRow, Store
from regiment.journal._views import (
    CommittedStep,
    Entry,
    JournaledApproval,
    JournaledCall,
    RunInfo,
    RunStatus,
    SessionRun,
    unknown_run,
)
from regiment.models import ModelResponse

__all__ = ("JournalLookups", "read_run")

_T = TypeVar("_T")
_log = logging.getLogger("regiment.journal")


class JournalLookups(ABC):
    """What a journal answers; ``BufferedJournal`` brings the store, the calls and the writes."""

    _store: Store
    _clock: Callable[[], float]
    _appended: int  # records (and lease changes) appended, and committed: see BufferedJournal
    _committed: int
    _threaded: bool  # the store is called in worker threads (else inline)
    _limiter: anyio.CapacityLimiter | None  # the writer's thread: one call at a time
    _reading: anyio.CapacityLimiter | None = None  # the reads' thread, see _read
    _reader: Store | None = None  # the reads' own store (connection), opened at the first read

    @abstractmethod
    async def flush(self) -> None:
        """Commit what is buffered (reads see this process's own writes)."""

    @abstractmethod
    async def _call(self, function: Callable[..., _T], *args: Any) -> _T:
        """Run a store call where the store wants it (its thread, or inline)."""

    @abstractmethod
    def _decode(self, body: bytes) -> Record:
        """One stored record."""

    async def _read(self, query: Callable[[Store], _T]) -> _T:
        """Run ``query`` on the store's reader (``Store.reader``: a connection of its own,
        in a thread of its own), so a read never queues behind a write that waits (for
        another process's lock, say): a service's reads answer while a resume's start waits."""
        if not self._threaded:
            return query(self._store)
        if self._reading is None:
            self._reading = anyio.CapacityLimiter(1)
        return await anyio.to_thread.run_sync(
            partial(self._on_reader, query), limiter=self._reading
        )

    def _on_reader(self, query: Callable[[Store], _T]) -> _T:
        if self._reader is None:  # (in the reads' thread: one at a time)
            self._reader = self._store.reader()
        return query(self._reader)

    def _refusing_reads(self) -> str | None:
        reader = self._reader
        return self._store.refusing_reads or (reader.refusing_reads if reader else None)

    def _writing(self) -> bool:
        """Whether a call of the writer is under way (a commit, or an acquire)."""
        return self._limiter is not None and self._limiter.borrowed_tokens > 0

    async def _close_stores(self) -> None:
        """Close the store, then the reads' one."""
        try:
            await self._call(self._store.close)
        finally:
            await self._close_reader()

    async def _close_reader(self) -> None:
        if self._reading is None:
            return
        reader, self._reader = self._reader, None
        if reader is not None:
            await anyio.to_thread.run_sync(reader.close, limiter=self._reading)

    async def _fresh(self) -> None:
        """Before a read: refuse it at once while a write waits for the store (a server
        that went away; a run's own read waits too, see ``patient_reads``), else commit
        what is buffered (reads see this process's writes). A read outside a run does not
        wait for a write under way (a commit or an acquire waiting for another process's
        lock, up to the busy timeout): it reads what is committed, on its own connection."""
        if not reads_wait():
            if (why := self._refusing_reads()) is not None:
                raise JournalError(why)
            if self._writing():
                return
            if self._committed < self._appended:  # it would lead a commit: is the store there?
                await self._call(self._store.probe)
        await self.flush()

    @property
    def where(self) -> str:
        """The file or database, as error messages name it."""
        return self._store.where

    async def read(self, run_id: str, *, after: int = 0) -> tuple[Entry, ...]:
        """The run's records after sequence number ``after``, in order.

        A record of a kind a newer regiment wrote (``NewerRecord``) is left out, with a
        warning, so what this regiment knows of the run can still be shown; a run's own
        read (a resume's, inside ``patient_reads``) raises it instead: replaying the run
        without it would not be replaying the run."""
        await self._fresh()
        rows = await self._read(lambda store: store.read(run_id, after))
        if not rows and after == 0:
            await self.get_run(run_id)  # raises for an unknown run
        return self._entries(run_id, rows)

    def _entries(self, run_id: str, rows: list[tuple[int, float, bytes]]) -> tuple[Entry, ...]:
        entries: list[Entry] = []
        newer: dict[str, int] = {}
        for seq, at, body in rows:
            try:
                entries.append(Entry(seq=seq, recorded_at=_utc(at), record=self._decode(body)))
            except NewerRecord as exc:
                if reads_wait():
                    raise
                newer[exc.kind] = newer.get(exc.kind, 0) + 1
        if newer:
            _newer_left_out(self.where, run_id, newer)
        return tuple(entries)

    async def get_run(self, run_id: str) -> RunInfo:
        """The run's listing; ``JournalError`` naming the journal if there is no such run."""
        await self._fresh()
        now = self._clock()
        row = await self._read(lambda store: store.run_row(run_id, now))
        if row is None:
            raise unknown_run(self.where, run_id)
        return row.info()

    async def read_run(self, run_id: str) -> tuple[RunInfo, tuple[Entry, ...]]:
        """``get_run`` and ``read`` in one read of the store (one snapshot): the listing's
        status is the records' own, never older than them (a "running" run with its final
        answer recorded). Records a newer regiment wrote are left out as by ``read``."""
        await self._fresh()
        now = self._clock()
        row, rows = await self._read(lambda store: store.run_snapshot(run_id, now))
        if row is None:
            raise unknown_run(self.where, run_id)
        return row.info(), self._entries(run_id, rows)

    async def list_runs(
        self, *, status: RunStatus | None = None, limit: int | None = None
    ) -> tuple[RunInfo, ...]:
        """Top-level runs, newest first, optionally only those of one status (a nested
        team's run is not listed: ``get_run`` and ``read`` take its id, see ``nested_run_id``)."""
        await self._fresh()
        if str(status) == "awaiting_approval":  # this status's name before it was "paused"
            status = "paused"
        now = self._clock()
        rows = await self._read(lambda store: store.list_runs(status, limit, now, None))
        return tuple(row.info() for row in rows)

    async def tool_call(
        self, run_id: str, plan_version: int, step_id: str, call_index: int
    ) -> JournaledCall | None:
        """The journaled intent and result of one tool call, or ``None`` if it never started."""
        records = await self._keyed(run_id, tool_key(plan_version, step_id, call_index))
        intents = [r for r in records if isinstance(r, ToolCallStarted)]
        results = [r for r in records if isinstance(r, ToolCallFinished)]
        if not intents:
            return None
        return JournaledCall(intent=intents[-1], result=results[-1] if results else None)

    async def model_response(self, run_id: str, call_key: str) -> ModelResponse | None:
        """The journaled response of the model call with this key, to replay instead of re-sending."""
        records = await self._keyed(run_id, model_key(call_key))
        responses = [r.response for r in records if isinstance(r, ModelCallFinished)]
        return responses[-1] if responses else None

    async def approval(self, run_id: str, approval_id: str) -> JournaledApproval | None:
        """The journaled request and decision of one approval; ``None`` if it was never asked."""
        records = await self._keyed(run_id, approval_key(approval_id))
        requests = [r for r in records if isinstance(r, ApprovalRequested)]
        decisions = [r for r in records if isinstance(r, ApprovalDecided)]
        if not requests:
            return None
        return JournaledApproval(request=requests[0], decision=decisions[0] if decisions else None)

    async def pending_approvals(self, run_id: str | None = None) -> tuple[ApprovalRequested, ...]:
        """Approval requests without a decision: of one run, or of every run awaiting one.

        A run that has ended (or that the journal does not have) has none: its undecided
        requests can take no decision any more.
        """
        await self._fresh()
        kinds = ("approval_requested", "approval_decided")
        if run_id is not None:
            now = self._clock()
            row = await self._read(lambda store: store.run_row(run_id, now))
            if row is None or row.status not in ("running", "stalled", "paused"):
                return ()
            bodies = await self._read(lambda store: store.read_kinds(run_id, kinds))
        else:  # every run's in one query, not one per run awaiting approval
            bodies = await self._read(lambda store: store.awaiting(kinds))
        records = [self._decode(body) for body in bodies]
        decided = {(r.run_id, r.approval_id) for r in records if isinstance(r, ApprovalDecided)}
        return tuple(
            r
            for r in records
            if isinstance(r, ApprovalRequested) and (r.run_id, r.approval_id) not in decided
        )

    async def session_history(
        self, session: str, *, exclude: str | None = None
    ) -> tuple[SessionRun, ...]:
        """The session's runs, oldest first (``exclude``: usually the current run's id)."""
        await self._fresh()
        now = self._clock()
        rows = await self._read(lambda store: store.list_runs(None, None, now, session))
        history: list[SessionRun] = []
        for row in reversed(rows):
            if row.run_id != exclude:
                kinds = ("step_reported", "run_finished")
                bodies = await self._read(partial(_kinds, run_id=row.run_id, kinds=kinds))
                history.append(_session_run(row, [self._decode(body) for body in bodies]))
        return tuple(history)

    async def _keyed(self, run_id: str, key: str) -> list[Record]:
        await self._fresh()
        bodies = await self._read(lambda store: store.keyed(run_id, key))
        return [self._decode(body) for body in bodies]


def _newer_left_out(where: str, run_id: str, kinds: dict[str, int]) -> None:
    counted = ", ".join(f"{count} of kind {kind!r}" for kind, count in sorted(kinds.items()))
    _log.warning(
        "journal %s: run %s has records this regiment (%s) does not know (%s): a newer "
        "regiment wrote them; they are left out of what is read here, and kept in the "
        "journal. Upgrade regiment to see them, or to resume the run",
        where,
        run_id,
        __version__,
        counted,
        extra={"newer_kinds": kinds},  # (``regiment show`` prints it with the run)
    )


def _kinds(store: Store, *, run_id: str, kinds: tuple[str, ...]) -> list[bytes]:
    return store.read_kinds(run_id, kinds)


def _session_run(row: RunRow, records: list[Record]) -> SessionRun:
    steps = tuple(
        CommittedStep(
            plan_version=r.plan_version, step_id=r.step_id, worker=r.worker, output=r.output
        )
        for r in records
        if isinstance(r, StepReported) and r.committed
    )
    answers = [r.answer for r in records if isinstance(r, RunFinished)]
    return SessionRun(
        run_id=row.run_id,
        goal=row.goal,
        status=row.status,
        started_at=_utc(row.started_at),
        answer=answers[-1] if answers else None,
        steps=steps,
    )


def _utc(timestamp: float) -> datetime:
    return datetime.fromtimestamp(timestamp, UTC)


async def read_run(journal: Journal, run_id: str) -> tuple[RunInfo, tuple[Entry, ...]]:
    """The run's listing and its records, read together: in one snapshot from the journals
    this package opens (``read_run`` of each), so the status is never older than the
    records; from a journal of your own (``get_run`` and ``read`` only), in two reads."""
    if isinstance(journal, JournalLookups):
        return await journal.read_run(run_id)
    info = await journal.get_run(run_id)
    return info, await journal.read(run_id)
