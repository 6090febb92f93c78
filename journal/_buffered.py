"""The async journal over a ``Store``: buffering, group commit, fencing state, decoding.

Appends are encoded on the caller's task and put in a buffer; nothing touches the
store until someone needs durability (``durable=True``, ``flush``, a read, a
lease operation, ``close``) or ``max_buffered`` records wait. Then one caller
becomes the leader and commits the whole buffer, every run's records in it, in
one transaction; callers that arrive meanwhile wait for that commit and, if their
records came after it started, lead the next one. So a sequence of records is
always committed as a prefix: when record *n* is durable, so is every record
before it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from functools import partial
from types import TracebackType
from typing import Self, TypeVar

import anyio

from regiment.errors import JournalError
from regiment.journal._codec import decode, encode_pending, model_key, tool_key
from regiment.journal._records import (
    ApprovalDecided,
    ApprovalRequested,
    ModelCallFinished,
    Record,
    RunCreated,
    RunFinished,
    StepReported,
    ToolCallFinished,
    ToolCallStarted,
)
from regiment.journal._store import Pending, RunRow, Store
from regiment.journal._views import (
    CommittedStep,
    Entry,
    JournaledCall,
    Lease,
    RunInfo,
    RunStatus,
    SessionRun,
)
from regiment.models import ModelResponse

__all__ = ("BufferedJournal",)

_T = TypeVar("_T")
_LeaseKey = tuple[str, int]


class BufferedJournal:
    """The behaviour every backend shares; a backend only brings its ``Store``."""

    max_buffered = 512

    def __init__(self, store: Store, *, clock: Callable[[], float] | None, threaded: bool) -> None:
        self._store = store
        self._clock = clock or time.time
        self._threaded = threaded
        self._limiter: anyio.CapacityLimiter | None = None
        self._buffer: list[Pending] = []
        self._appended = 0
        self._committed = 0
        self._committing: anyio.Event | None = None
        self._next_seq: dict[_LeaseKey, int] = {}
        self._broken: dict[_LeaseKey, JournalError] = {}
        self._unreported: set[_LeaseKey] = set()

    @property
    def where(self) -> str:
        """The file or database, as error messages name it."""
        return self._store.where

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    async def _call(self, function: Callable[..., _T], *args: object) -> _T:
        if not self._threaded:
            return function(*args)
        if self._limiter is None:
            self._limiter = anyio.CapacityLimiter(1)
        return await anyio.to_thread.run_sync(partial(function, *args), limiter=self._limiter)

    # -- ownership -------------------------------------------------------------

    async def create_run(self, run: RunCreated, *, owner: str, ttl: float) -> Lease:
        """Record a new run (its record gets sequence number 1) and lease it to ``owner``."""
        now = self._clock()
        lease = Lease(run_id=run.run_id, owner=owner, token=1, expires_at=now + ttl)
        started = run.created_at.timestamp()
        row = RunRow(run.run_id, run.team, run.goal, run.session, "running", started, now)
        first = encode_pending(lease, 1, run, now)
        await self._call(self._store.create, first, row, run.config_hash, lease)
        self._next_seq[(lease.run_id, lease.token)] = 2
        return lease

    async def acquire(self, run_id: str, *, owner: str, ttl: float) -> Lease:
        """Take the run over: refused while another owner's lease is alive."""
        await self.flush()
        lease, last_seq = await self._call(self._store.acquire, run_id, owner, self._clock(), ttl)
        self._next_seq[(lease.run_id, lease.token)] = last_seq + 1
        return lease

    async def renew(self, lease: Lease, *, ttl: float) -> Lease:
        """Extend the lease (the heartbeat); ``LeaseLost`` if another owner took the run."""
        self._raise_if_broken(lease)
        return await self._call(self._store.renew, lease, self._clock(), ttl)

    async def release(self, lease: Lease) -> None:
        """Commit what the lease wrote, then give the run up."""
        await self.flush()
        self._raise_if_broken(lease)
        await self._call(self._store.release, lease, self._clock())
        self._next_seq.pop((lease.run_id, lease.token), None)

    # -- writing ---------------------------------------------------------------

    async def append(self, lease: Lease, record: Record, *, durable: bool = False) -> int:
        """Append one record; its sequence number. ``durable=True`` waits for its commit."""
        (seq,) = await self.append_all(lease, (record,), durable=durable)
        return seq

    async def append_all(
        self, lease: Lease, records: Iterable[Record], *, durable: bool = False
    ) -> tuple[int, ...]:
        """Append records in order; their sequence numbers. ``durable=True`` waits for the commit."""
        key = (lease.run_id, lease.token)
        self._raise_if_broken(lease)
        seq = self._next_seq.get(key)
        if seq is None:
            raise JournalError(
                f"run {lease.run_id!r}: this lease (token {lease.token}) was not acquired through "
                "this journal object, or was released; use the Lease create_run/acquire returned"
            )
        now = self._clock()
        seqs: list[int] = []
        for record in records:
            if record.run_id != lease.run_id:
                raise JournalError(
                    f"a record of run {record.run_id!r} cannot be written with the lease of "
                    f"run {lease.run_id!r}"
                )
            self._buffer.append(encode_pending(lease, seq, record, now))
            seqs.append(seq)
            seq += 1
        self._next_seq[key] = seq
        self._appended += len(seqs)
        if durable or len(self._buffer) >= self.max_buffered:
            await self._wait_committed(self._appended)
            self._raise_if_broken(lease)
        return tuple(seqs)

    async def flush(self) -> None:
        """Commit everything appended so far (by any run of this journal object)."""
        await self._wait_committed(self._appended)

    def _raise_if_broken(self, lease: Lease) -> None:
        key = (lease.run_id, lease.token)
        error = self._broken.get(key)
        if error is not None:
            self._unreported.discard(key)
            raise error

    async def _wait_committed(self, position: int) -> None:
        while self._committed < position:
            if self._committing is not None:
                await self._committing.wait()
            else:
                await self._commit_buffer()

    async def _commit_buffer(self) -> None:
        batch, self._buffer = self._buffer, []
        done = self._committing = anyio.Event()
        try:
            with anyio.CancelScope(shield=True):
                refused = await self._call(self._store.commit, batch, self._clock())
        except JournalError as exc:
            refused = {pending.run_id: exc for pending in batch}
        finally:
            self._committed += len(batch)
            self._committing = None
            done.set()
        for pending in batch:
            error = refused.get(pending.run_id)
            key = (pending.run_id, pending.token)
            if error is not None and key not in self._broken:
                self._broken[key] = error
                self._unreported.add(key)

    # -- reading ---------------------------------------------------------------

    async def read(self, run_id: str, *, after: int = 0) -> tuple[Entry, ...]:
        """The run's records after sequence number ``after``, in order."""
        await self.flush()
        rows = await self._call(self._store.read, run_id, after)
        if not rows and after == 0:
            await self.get_run(run_id)  # raises for an unknown run
        return tuple(
            Entry(seq=seq, recorded_at=_utc(at), record=self._decode(body))
            for seq, at, body in rows
        )

    async def get_run(self, run_id: str) -> RunInfo:
        """The run's listing; ``JournalError`` naming the journal if there is no such run."""
        await self.flush()
        row = await self._call(self._store.run_row, run_id, self._clock())
        if row is None:
            raise JournalError(
                f"journal {self.where} has no run {run_id!r}; `regiment runs` lists them"
            )
        return row.info()

    async def list_runs(
        self, *, status: RunStatus | None = None, limit: int | None = None
    ) -> tuple[RunInfo, ...]:
        """Runs, newest first, optionally only those of one status."""
        await self.flush()
        rows = await self._call(self._store.list_runs, status, limit, self._clock(), None)
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

    async def pending_approvals(self, run_id: str | None = None) -> tuple[ApprovalRequested, ...]:
        """Approval requests without a decision: of one run, or of every run awaiting one."""
        await self.flush()
        if run_id is not None:
            run_ids = [run_id]
        else:
            rows = await self._call(
                self._store.list_runs, "awaiting_approval", None, self._clock(), None
            )
            run_ids = [row.run_id for row in reversed(rows)]
        pending: list[ApprovalRequested] = []
        for one in run_ids:
            kinds = ("approval_requested", "approval_decided")
            records = [
                self._decode(b) for b in await self._call(self._store.read_kinds, one, kinds)
            ]
            decided = {r.approval_id for r in records if isinstance(r, ApprovalDecided)}
            pending += [
                r
                for r in records
                if isinstance(r, ApprovalRequested) and r.approval_id not in decided
            ]
        return tuple(pending)

    async def session_history(
        self, session: str, *, exclude: str | None = None
    ) -> tuple[SessionRun, ...]:
        """The session's runs, oldest first (``exclude``: usually the current run's id)."""
        await self.flush()
        rows = await self._call(self._store.list_runs, None, None, self._clock(), session)
        history: list[SessionRun] = []
        for row in reversed(rows):
            if row.run_id != exclude:
                kinds = ("step_reported", "run_finished")
                bodies = await self._call(self._store.read_kinds, row.run_id, kinds)
                history.append(_session_run(row, [self._decode(body) for body in bodies]))
        return tuple(history)

    async def _keyed(self, run_id: str, key: str) -> list[Record]:
        await self.flush()
        return [self._decode(body) for body in await self._call(self._store.keyed, run_id, key)]

    def _decode(self, body: bytes) -> Record:
        return decode(body, self.where)

    async def close(self) -> None:
        """Commit what is buffered, then close.

        Raises:
            JournalError: a write failed and no call of its lease has reported it yet.
        """
        try:
            await self.flush()
        finally:
            await self._call(self._store.close)
        for key in sorted(self._unreported):
            raise self._broken[key]


def _utc(timestamp: float) -> datetime:
    return datetime.fromtimestamp(timestamp, UTC)


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
