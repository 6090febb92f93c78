"""The synchronous storage seam under every journal, and the lease rules they share.

A ``Store`` is called by one thread at a time (the journal's writer thread, or the event
loop for the in-memory store). It speaks rows and encoded bodies; the async ``BufferedJournal``
above it owns buffering, group commit, encoding and decoding: every backend behaves alike.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from typing import Any, NamedTuple, Protocol, cast

from regiment.errors import AlreadyFinished, JournalError, LeaseHeld, LeaseLost
from regiment.journal._nesting import nested_under, top_run_id, with_tops
from regiment.journal._owners import local_owner, owners_gone
from regiment.journal._views import Lease, RunInfo, RunStatus, unknown_run

__all__ = (
    "Batch",
    "Creation",
    "LeaseKey",
    "LeaseState",
    "Pending",
    "Refused",
    "RunRow",
    "Store",
    "check_above",
    "check_acquire",
    "check_owner",
    "check_write",
    "derive_status",
    "lapsed",
    "nested_under",
    "plan_commit",
    "with_tops",
)


LeaseKey = tuple[str, int]
"""``(run_id, token)``: one lease's records, refusals and sequence numbers."""


class Pending(NamedTuple):
    """One encoded record waiting for its commit."""

    run_id: str
    owner: str
    token: int
    seq: int
    kind: str
    key: str | None
    body: bytes
    recorded_at: float
    final_status: str | None
    approvals_delta: int


class RunRow(NamedTuple):
    """A run's listing fields, status already derived (see ``lapsed``), and who holds
    its lease, if anyone."""

    run_id: str
    team: str
    goal: str
    session: str | None
    status: RunStatus
    started_at: float
    updated_at: float
    owner: str | None = None

    def info(self) -> RunInfo:
        """As the public ``RunInfo``."""
        return RunInfo(
            run_id=self.run_id,
            team=self.team,
            goal=self.goal,
            status=self.status,
            started_at=datetime.fromtimestamp(self.started_at, UTC),
            updated_at=datetime.fromtimestamp(self.updated_at, UTC),
            session=self.session,
        )


class Creation(NamedTuple):
    """A new run waiting for its commit: its listing, its lease and its first record."""

    first: Pending
    row: RunRow
    config_hash: str
    lease: Lease
    top: Lease | None = None  # a nested run's: its creator's lease of the top run


class Batch(NamedTuple):
    """What one commit writes, in one transaction and in this order: new runs, records, renewed
    leases (each with its new expiry), released leases. So runs created, written, kept alive
    and released at once share one commit (one fsync on PostgreSQL), not a transaction each.
    ``durable``: it holds a record appended ``durable=True``; the commit must reach the disk."""

    creations: Sequence[Creation] = ()
    records: Sequence[Pending] = ()
    renewals: Sequence[tuple[Lease, float]] = ()
    releases: Sequence[Lease] = ()
    durable: bool = False

    def size(self) -> int:
        return len(self.creations) + len(self.records) + len(self.renewals) + len(self.releases)


class Refused(NamedTuple):
    """What a commit refused, each with the reason: leases whose writes were refused, new
    runs whose id was taken, renewals of leases that are no longer the run's."""

    leases: dict[LeaseKey, JournalError]
    runs: dict[str, JournalError]
    renewals: dict[LeaseKey, JournalError]


class LeaseState(NamedTuple):
    """The ownership columns of one run."""

    owner: str | None
    token: int
    expires_at: float
    final_status: str | None
    last_seq: int


class Store(Protocol):
    """Rows in, rows out; raises ``JournalError`` for anything that went wrong."""

    where: str
    refusing_reads: str | None  # while set (a write waits for the server), reads raise it

    def probe(self) -> None:
        """Before a read that must commit first: ``JournalError`` at once if unreachable."""

    def reader(self) -> Store:
        """A store for the journal's reads, on a connection of its own (``self`` where the
        reads are not threaded), so they never wait behind this store's writes; called in
        the reads' thread, at the first read. ``JournalError`` once this one is closed."""
        ...

    def acquire(
        self, run_id: str, owner: str, now: float, ttl: float, top: Lease | None = None
    ) -> tuple[Lease, int]:
        """Take the run's lease (see ``check_acquire``; ``top``: for a nested run, the
        caller's lease of its top run); return it and the run's last seq.

        The leases of its nested runs (``nested_under``, any depth, not finished) that its
        previous owner held are taken with it, in the same transaction: their tokens go up
        and they are free for the new owner to acquire when it gets to them (that owner
        took the run over, nested runs included), so the old owner's late writes to them
        are refused, as its writes to the run are."""
        ...

    def commit(self, batch: Batch, now: float) -> Refused:
        """Write ``batch`` in one transaction: insert its new runs (each with its lease and
        first record; a run id in use is refused, and so is a nested run whose top run
        another owner holds, see ``check_above``), append its records (refused for a lease
        that is not current, see ``check_write``), extend its renewed leases (refused for
        one that is not the run's current lease, see ``check_owner``), then give its
        released leases up (the run lists as stalled until someone acquires it; a stale
        lease is a no-op)."""
        ...

    def read(self, run_id: str, after: int) -> list[tuple[int, float, bytes]]:
        """``(seq, recorded_at, body)`` of the run's records after ``after``, in order."""
        ...

    def read_kinds(self, run_id: str, kinds: tuple[str, ...]) -> list[bytes]:
        """Bodies of the run's records of these kinds, in order."""
        ...

    def awaiting(self, kinds: tuple[str, ...]) -> list[bytes]:
        """Bodies of the records of these kinds of every run awaiting approval (not
        finished, a request undecided), in one go: the runs oldest first, each in order."""
        ...

    def keyed(self, run_id: str, key: str) -> list[bytes]:
        """Bodies of the run's records with this look-up key, in order."""
        ...

    def run_row(self, run_id: str, now: float) -> RunRow | None:
        """The run's listing, or ``None`` if there is no such run."""
        ...

    def run_snapshot(
        self, run_id: str, now: float
    ) -> tuple[RunRow | None, list[tuple[int, float, bytes]]]:
        """``run_row`` and ``read(run_id, 0)`` in one read transaction: one snapshot."""
        ...

    def list_runs(
        self, status: RunStatus | None, limit: int | None, now: float, session: str | None
    ) -> list[RunRow]:
        """Runs newest first, optionally of one status and/or one session."""
        ...

    def close(self) -> None:
        """Close the connection; further calls raise ``JournalError``."""
        ...


def derive_status(
    final: str | None, pending_approvals: int, expires_at: float, now: float, owned: bool = True
) -> RunStatus:
    """The status a run lists with (the SQL stores repeat it as a CASE); ``owned``: its lease
    is not given up (a paused run gives it up at its pause; dead before: ``stalled``)."""
    if final is not None:
        return cast("RunStatus", final)
    if expires_at > now and owned:
        return "paused" if pending_approvals > 0 else "running"
    return "paused" if pending_approvals > 0 and not owned else "stalled"


def lapsed(listed: Iterable[Sequence[Any]]) -> list[RunRow]:
    """Listed rows (a ``RunRow``'s fields) as ``RunRow``s, each as a resume would see it:
    a ``running`` or ``paused`` run whose owner is a process of this machine that is gone
    lists as ``stalled``, as once its lease runs out (``check_acquire`` takes it over at
    once). Each owner is looked up once (``/proc``), not once per run."""
    rows = [RunRow(*row) for row in listed]
    held = [r.owner for r in rows if r.status in ("running", "paused") and r.owner is not None]
    gone = owners_gone(held) if held else set()
    return [
        r._replace(status="stalled") if r.status in ("running", "paused") and r.owner in gone else r
        for r in rows
    ]


def check_acquire(
    state: LeaseState | None,
    run_id: str,
    owner: str,
    now: float,
    where: str,
    above: LeaseState | None = None,
    top: Lease | None = None,
) -> None:
    """Refuse to hand out a run that is unknown, finished, or owned by a live lease
    (``above``: for a nested run, the row of the top run it belongs to, refused too
    while another owner's lease of it is alive: the nested run is that owner's; and,
    given ``top``, the caller's lease of that top run, refused if that lease is stale).

    Raises:
        JournalError: no such run, or it has finished.
        LeaseLost: ``top`` is not the top run's current lease (see ``check_top``).
        LeaseHeld: another owner's lease has not expired and that owner may still run
            (an owner on this machine whose process is gone, see ``local_owner``, has
            no lease to wait out).
    """
    if state is None:
        raise unknown_run(where, run_id)
    if state.final_status is not None:
        raise AlreadyFinished(
            f"run {run_id!r} in journal {where} has already finished ({state.final_status}); "
            "there is nothing to resume",
            status=state.final_status,
        )
    check_top(above, run_id, top)
    top_id = top_run_id(run_id)
    if above is not None and top_id is not None and above.owner not in (None, owner):
        _check_free(above, top_id, owner, now)
    _check_free(state, run_id, owner, now)


def _check_free(state: LeaseState, run_id: str, owner: str, now: float) -> None:
    """Refuse ``owner`` a run whose lease is another's, alive, and held by one that may run."""
    if state.owner is None or state.expires_at <= now:
        return
    local, left = local_owner(state.owner), state.expires_at - now
    if local is None:
        raise LeaseHeld(
            f"run {run_id!r} is owned by {state.owner!r}, whose lease is alive for another "
            f"{left:.1f} s: if that process still runs, wait for it to finish or stop it; if "
            f"it died, its lease lapses by itself, so retry in {left:.0f} s"
        )
    pid, gone = local
    if pid == os.getpid():
        raise LeaseHeld(
            f"run {run_id!r} is running in this process already ({state.owner!r}, its "
            f"lease alive for another {left:.1f} s): wait for that run to end; if it ended "
            "because the journal could not be written (its lease was kept: a journal that "
            f"failed is not written to again), its lease lapses in {left:.0f} s: resume it then"
        )
    if not gone:
        raise LeaseHeld(
            f"run {run_id!r} is owned by process {pid} on this machine ({state.owner!r}), "
            "which still runs: wait for it to finish, or stop it; once it has stopped, the "
            "run can be resumed at once"
        )


def check_owner(state: LeaseState | None, lease: Lease, where: str) -> LeaseState:
    """Refuse a lease that is not the run's current one.

    Raises:
        LeaseLost: the fencing token is stale, or the lease was released.
        JournalError: no such run.
    """
    if state is None:
        raise JournalError(f"journal {where} has no run {lease.run_id!r} to write")
    if state.token != lease.token:
        raise LeaseLost(
            f"run {lease.run_id!r}: {lease.owner!r} wrote with fencing token {lease.token}, but "
            f"{state.owner or 'another owner'!r} took the run over (token {state.token}); "
            "this process must stop working on it",
            owner=state.owner or None,
        )
    if state.owner != lease.owner:
        raise LeaseLost(
            f"run {lease.run_id!r}: the lease of {lease.owner!r} was released; acquire it again"
        )
    return state


def check_above(above: LeaseState | None, lease: Lease, top: Lease | None = None) -> None:
    """Refuse to create nested run ``lease.run_id`` (``above``: the row of the top run it
    belongs to) for an owner other than the one that holds that top run: it was taken
    over, and the creator is the process that lost it (it must stop; its new nested run
    would be worked on beside the new owner's). Given ``top`` (the creator's lease of the
    top run), refused too when that lease is stale, though no one holds the run now.

    Raises:
        LeaseLost: another owner holds the top run, or ``top`` is stale.
    """
    check_top(above, lease.run_id, top)
    if above is None or above.owner is None or above.owner == lease.owner:
        return
    raise LeaseLost(
        f"run {lease.run_id!r}: {lease.owner!r} started it, but the run it belongs to, "
        f"{top_run_id(lease.run_id)!r}, was taken over by {above.owner!r} (token "
        f"{above.token}); this process must stop working on it",
        owner=above.owner,
    )


def check_top(above: LeaseState | None, run_id: str, top: Lease | None) -> None:
    """Refuse a nested run to a caller whose lease of its top run (``top``; ``above``:
    that run's row) is stale (``LeaseLost``): the top run was taken over since, maybe let
    go again by its new owner (a pause for approval), so its row has no owner now."""
    if top is None or above is None or above.token == top.token:
        return
    raise LeaseLost(
        f"run {run_id!r}: {top.owner!r} holds the run it belongs to, {top.run_id!r}, with "
        f"fencing token {top.token}, but {above.owner or 'another owner'!r} took that run "
        f"over since (token {above.token}); this process must stop working on it",
        owner=above.owner,
    )


def check_write(state: LeaseState | None, lease: Lease, first_seq: int, where: str) -> None:
    """Refuse a write whose lease is not current, to a finished run, or that would leave a gap.

    Raises:
        LeaseLost: the fencing token is stale, or the lease was released.
        JournalError: no such run, it has finished, or the sequence has a gap.
    """
    state = check_owner(state, lease, where)
    if state.final_status is not None:
        raise JournalError(f"run {lease.run_id!r} has finished; nothing may follow its result")
    if state.last_seq != first_seq - 1:
        raise JournalError(
            f"run {lease.run_id!r} in journal {where}: record {first_seq} does not follow "
            f"record {state.last_seq}; the journal was changed behind this process's back"
        )


def plan_commit(
    batch: Sequence[Pending], states: dict[str, LeaseState], where: str
) -> tuple[list[list[Pending]], dict[LeaseKey, JournalError]]:
    """Split ``batch`` into the groups to write and the leases to refuse.

    ``states`` holds the runs' rows as read (and locked) in the write transaction;
    it is updated as groups are accepted, so a zombie's and its heir's records in
    one batch are judged in order.
    """
    accepted, refused = list[list[Pending]](), dict[LeaseKey, JournalError]()
    groups = dict[LeaseKey, list[Pending]]()
    for pending in batch:
        groups.setdefault((pending.run_id, pending.token), []).append(pending)
    for (run_id, token), records in groups.items():
        first = records[0]
        lease = Lease(run_id=run_id, owner=first.owner, token=token, expires_at=0.0)
        try:
            check_write(states.get(run_id), lease, first.seq, where)
        except JournalError as exc:
            refused[(run_id, token)] = exc
            continue
        accepted.append(records)
        final = next((p.final_status for p in records if p.final_status), None)
        state = states[run_id]
        states[run_id] = state._replace(
            last_seq=records[-1].seq, final_status=final or state.final_status
        )
    return accepted, refused
