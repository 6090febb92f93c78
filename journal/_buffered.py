"""The async journal over a ``Store``: buffering, group commit, fencing state, decoding.

Appends are encoded on the caller's task and put in a buffer; nothing touches the
store until someone needs durability (``durable=True``, ``flush``, a read, a
lease operation, ``close``) or ``max_buffered`` records wait. Then one caller
becomes the leader and commits the whole buffer, every run's records in it, in
one transaction; callers that arrive meanwhile wait for that commit and, if their
records came after it started, lead the next one. So a sequence of records is
always committed as a prefix: when record *n* is durable, so is every record
before it. A commit that holds a record appended with ``durable=True`` is marked
``Batch.durable``: the store makes it reach the disk before it returns (an SQLite
journal under ``synchronous="normal"`` fsyncs only those commits).
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable, Iterable
from functools import partial
from types import TracebackType
from typing import Self, TypeVar

import anyio

from regiment.errors import JournalError
from regiment.journal._codec import decode, encode_pending
from regiment.journal._lookups import JournalLookups
from regiment.journal._records import (
    Record,
    RunCreated,
)
from regiment.journal._store import (
    Batch,
    Creation,
    LeaseKey,
    Pending,
    Refused,
    RunRow,
    Store,
    nested_under,
)
from regiment.journal._views import (
    Lease,
)
from regiment.journal._watch import CommitWatch

__all__ = ("BufferedJournal",)

_T = TypeVar("_T")


class BufferedJournal(JournalLookups, CommitWatch):
    """The behaviour every backend shares; a backend only brings its ``Store``."""

    max_buffered = 512

    def __init__(self, store: Store, *, clock: Callable[[], float] | None, threaded: bool) -> None:
        self._store = store
        self._clock = clock or time.time
        self._threaded = threaded
        self._limiter: anyio.CapacityLimiter | None = None
        self._buffer: list[Pending] = []
        self._creations: list[Creation] = []  # new runs, committed with the next batch
        self._renewals: list[tuple[Lease, float]] = []  # leases to extend, to when; likewise
        self._releases: list[Lease] = []  # leases given up, likewise
        self._lost: dict[LeaseKey, JournalError] = {}  # renewals refused, until renewed/released
        self._taken: dict[str, JournalError] = {}  # new runs refused, until create_run reads it
        self._appended = 0
        self._committed = 0
        self._durable_to = 0  # the last position appended with durable=True
        self._committing: anyio.Event | None = None
        self._next_seq: dict[LeaseKey, int] = {}
        self._broken: dict[LeaseKey, JournalError] = {}
        self._unreported: set[LeaseKey] = set()
        self._held: dict[LeaseKey, Lease] = {}  # leases handed out and not released

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

    async def create_run(
        self, run: RunCreated, *, owner: str, ttl: float, above: Lease | None = None
    ) -> Lease:
        """Record a new run (its record gets sequence number 1) and lease it to ``owner``
        (``above``: for a nested run, the caller's lease of its top run, see ``Journal``).

        The run is written by the next group commit, with whatever else waits for one:
        runs created at once share a transaction. That commit is durable: the run's id
        leaves the process next, and a crash of the machine must not leave it naming no run.
        """
        now = self._clock()
        lease = Lease(run_id=run.run_id, owner=owner, token=1, expires_at=now + ttl)
        started = run.created_at.timestamp()
        row = RunRow(run.run_id, run.team, run.goal, run.session, "running", started, now)
        first = encode_pending(lease, 1, run, now)
        self._creations.append(Creation(first, row, run.config_hash, lease, above))
        self._appended += 1
        self._durable_to = self._appended
        await self._wait_committed(self._appended)
        error = self._taken.pop(run.run_id, None)
        if error is not None:
            raise error
        self._next_seq[(lease.run_id, lease.token)] = 2
        self._held[(lease.run_id, lease.token)] = lease
        return lease

    async def acquire(
        self, run_id: str, *, owner: str, ttl: float, above: Lease | None = None
    ) -> Lease:
        """Take the run over: refused while another owner's lease is alive (``above``:
        for a nested run, the caller's lease of its top run, see ``Journal``). Leases of
        the run that this journal handed out and whose writes failed are let go of first."""
        _let_go_of_failed(self, run_id)
        await self.flush()
        now = self._clock()
        lease, last_seq = await self._call(self._store.acquire, run_id, owner, now, ttl, above)
        self._next_seq[(lease.run_id, lease.token)] = last_seq + 1
        self._held[(lease.run_id, lease.token)] = lease
        return lease

    async def renew(self, lease: Lease, *, ttl: float) -> Lease:
        """Extend the lease (the heartbeat); ``LeaseLost`` if another owner took the run.

        Written by the next group commit: the heartbeats of many runs share transactions.
        """
        self._raise_if_broken(lease)
        key = (lease.run_id, lease.token)
        self._lost.pop(key, None)  # (tried again: its last refusal is over)
        expires_at = self._clock() + ttl
        self._renewals.append((lease, expires_at))
        self._appended += 1
        await self._wait_committed(self._appended)
        if (error := self._lost.get(key)) is not None:  # kept for its release (its run
            raise _raised(error)  # stops at it): that release waits for no commit
        return Lease(
            run_id=lease.run_id, owner=lease.owner, token=lease.token, expires_at=expires_at
        )

    async def release(self, lease: Lease) -> None:
        """Commit what the lease wrote, then give the run up.

        Raises:
            JournalError: some of the lease's writes were refused (after letting go).
        """
        key = (lease.run_id, lease.token)
        error = self._broken.get(key) or self._lost.get(key)
        if error is not None and key in self._held:  # its run stopped at the failure:
            self._unreported.discard(key)  # let go without waiting (for the next commit:
            _let_go(self, key, lease)  # the journal may still be failing)
            raise _raised(error)
        self._releases.append(lease)  # after the lease's records: written in the same commit
        self._appended += 1
        await self._wait_committed(self._appended)  # a stale lease's release is a no-op
        self._next_seq.pop(key, None)
        self._held.pop(key, None)
        self._lost.pop(key, None)
        # The lease is done: its refusal is reported here, once, and not kept for good.
        error = self._broken.pop(key, None)
        self._unreported.discard(key)
        if error is not None:
            raise _raised(error)

    # -- writing ---------------------------------------------------------------

    async def append(self, lease: Lease, record: Record, *, durable: bool = False) -> int:
        """Append one record; its sequence number. ``durable=True`` waits for its commit."""
        (seq,) = await self.append_all(lease, (record,), durable=durable)
        return seq

    async def append_all(
        self, lease: Lease, records: Iterable[Record], *, durable: bool = False
    ) -> tuple[int, ...]:
        """Append records in order; their sequence numbers. ``durable=True`` waits for the commit."""
        records = tuple(records)
        first = self._next_for(lease, records)
        now = self._clock()
        seqs = tuple(range(first, first + len(records)))
        self._buffer += [
            encode_pending(lease, s, r, now) for s, r in zip(seqs, records, strict=True)
        ]
        self._next_seq[(lease.run_id, lease.token)] = first + len(records)
        self._appended += len(records)
        if durable:
            self._durable_to = self._appended  # its commit must reach the disk
        if durable or len(self._buffer) >= self.max_buffered:
            await self._wait_committed(self._appended)
            self._raise_if_broken(lease)
        return seqs

    def _next_for(self, lease: Lease, records: tuple[Record, ...]) -> int:
        """The lease's next sequence number, once the lease and the records check out."""
        self._raise_if_broken(lease)
        seq = self._next_seq.get((lease.run_id, lease.token))
        if seq is None:
            raise JournalError(
                f"run {lease.run_id!r}: this lease (token {lease.token}) was not acquired through "
                "this journal object, or was released; use the Lease create_run/acquire returned"
            )
        for record in records:
            if record.run_id != lease.run_id:
                raise JournalError(
                    f"a record of run {record.run_id!r} cannot be written with the lease of "
                    f"run {lease.run_id!r}"
                )
        return seq

    async def flush(self, lease: Lease | None = None) -> None:
        """Commit everything appended so far (by any run of this journal object).

        Args:
            lease: raise the ``JournalError`` (or ``LeaseLost``) that refused any of
                this lease's writes; without it, refusals wait for their lease's
                next call (or ``close``).
        """
        await self._wait_committed(self._appended)
        if lease is not None:
            self._raise_if_broken(lease)

    def _raise_if_broken(self, lease: Lease) -> None:
        key = (lease.run_id, lease.token)
        error = self._broken.get(key)
        if error is not None:
            self._unreported.discard(key)
            raise _raised(error)

    async def _wait_committed(self, position: int) -> None:
        while self._committed < position:
            if self._committing is not None:
                await self._committing.wait()
            elif not self._threaded:
                self._commit(_take_buffer(self), self._store.commit)
            else:
                # Tasks the last commit woke append first, so they share the next one.
                await anyio.lowlevel.checkpoint()
                if self._committing is None and self._committed < position:
                    await self._commit_in_thread()

    async def _commit_in_thread(self) -> None:
        batch = _take_buffer(self)
        done = self._committing = anyio.Event()
        refused = Refused({}, {}, {})
        try:
            with anyio.CancelScope(shield=True):  # a started commit is seen through
                refused = await self._call(self._store.commit, batch, self._clock())
        except JournalError as exc:
            refused = _refuse_all(batch, exc)
        except Exception as exc:  # a bug below: the batch's runs must not go on as if written
            error = JournalError(f"journal {self.where}: {exc!r}")
            refused = _refuse_all(batch, error)
            raise error from exc
        finally:
            _settle(self, batch, refused)
            self._committing = None
            done.set()

    def _commit(self, batch: Batch, commit: Callable[[Batch, float], Refused]) -> None:
        try:
            refused = commit(batch, self._clock())
        except JournalError as exc:
            refused = _refuse_all(batch, exc)
        _settle(self, batch, refused)

    # -- reading ---------------------------------------------------------------

    def _decode(self, body: bytes) -> Record:
        return decode(body, self.where)

    async def close(self) -> None:
        """Commit what is buffered, then close.

        Raises:
            JournalError: a write failed and no call of its lease has reported it yet.
        """
        _let_go_of_failed(self, None)  # (best-effort: a failed commit is reported below)
        try:
            await self.flush()
        finally:
            await self._close_stores()
        for key in sorted(self._unreported):
            raise _raised(self._broken[key])


def _take_buffer(journal: BufferedJournal) -> Batch:
    """What waits for a commit, as one batch, leaving the buffers empty. No batch is in
    flight, so it starts at ``_committed``: it is durable if a record after that was."""
    durable = journal._durable_to > journal._committed
    parts = (journal._creations, journal._buffer, journal._renewals, journal._releases)
    journal._creations, journal._buffer, journal._renewals, journal._releases = [], [], [], []
    return Batch(*parts, durable)


def _settle(journal: BufferedJournal, batch: Batch, refused: Refused) -> None:
    """Count the batch as done; keep what it refused, for the next call; tell watchers."""
    journal._committed += batch.size()
    journal._taken.update(refused.runs)
    journal._lost.update((key, _kept(error)) for key, error in refused.renewals.items())
    for key, error in refused.leases.items():
        # (a lease let go of is not written with again: its refused release is not kept)
        if key not in journal._broken and key in journal._next_seq:
            journal._broken[key] = _kept(error)
            journal._unreported.add(key)
    journal._tell_watchers(batch.records, refused.leases)


def _kept(error: JournalError) -> JournalError:
    """``error``, to keep until its lease's next call, without the frames its raise (and
    its cause's) went through: a run whose journal failed ends, and a long-lived journal
    kept every such run's frames, with what they held (its records), until it closed."""
    seen: list[BaseException] = []
    links: list[BaseException | None] = [error]
    while links:  # (these raises are over: the commit caught them)
        link = links.pop()
        if link is not None and link not in seen:
            seen.append(link)
            link.__traceback__ = None
            links += (link.__cause__, link.__context__)
    return error


def _raised(error: JournalError) -> JournalError:
    """A copy of the kept ``error`` to raise: each raise of the kept one itself would
    add the raising frames to it, and keep them with it."""
    fresh = copy.copy(error)  # (its class, message and attributes: LeaseLost's owner)
    fresh.__cause__ = error.__cause__
    return fresh


def _refuse_all(batch: Batch, error: JournalError) -> Refused:
    leases = {(pending.run_id, pending.token): error for pending in batch.records}
    leases.update({(lease.run_id, lease.token): error for lease in batch.releases})
    runs = {creation.row.run_id: error for creation in batch.creations}
    return Refused(
        leases, runs, {(lease.run_id, lease.token): error for lease, _ in batch.renewals}
    )


def _let_go_of_failed(journal: BufferedJournal, run_id: str | None) -> None:
    """Queue the release of the leases ``journal`` handed out whose writes failed (of
    ``run_id`` and its nested runs; ``None``: all). Their runs stopped at the failure
    keeping them (a journal that failed is not written to as a run ends), so a resume
    through this journal waited for them to lapse; they write no more, so letting go is
    safe. Best-effort: the journal may still be failing (then the lease is kept)."""
    nested = "" if run_id is None else nested_under(run_id)
    for key, lease in list(journal._held.items()):
        mine = run_id is None or key[0] == run_id or key[0].startswith(nested)
        if mine and key in journal._broken:
            _let_go(journal, key, lease)


def _let_go(journal: BufferedJournal, key: LeaseKey, lease: Lease) -> None:
    """Queue the release of ``lease``, whose writes failed, and forget it, and its error
    once reported (``close`` reports the rest): a long-lived journal kept every such
    run's lease and error until it closed."""
    del journal._held[key]
    journal._next_seq.pop(key, None)
    journal._lost.pop(key, None)
    if key not in journal._unreported:
        journal._broken.pop(key, None)
    journal._releases.append(lease)
    journal._appended += 1
