"""The in-memory store: the library default; everything is gone when the process ends."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Self, final

from regiment.errors import JournalError
from regiment.journal._buffered import BufferedJournal
from regiment.journal._nesting import NESTED_MARK, top_run_id
from regiment.journal._store import (
    Batch,
    LeaseKey,
    LeaseState,
    Pending,
    Refused,
    RunRow,
    check_above,
    check_acquire,
    check_owner,
    derive_status,
    lapsed,
    nested_under,
    plan_commit,
)
from regiment.journal._views import IN_MEMORY, Lease, RunStatus

__all__ = ("MemoryJournal",)


@dataclass
class _Run:
    row: RunRow
    owner: str | None
    token: int
    expires_at: float
    final_status: str | None = None
    pending_approvals: int = 0
    records: list[Pending] = field(default_factory=list)

    def state(self) -> LeaseState:
        return LeaseState(
            self.owner, self.token, self.expires_at, self.final_status, len(self.records)
        )

    def listed(self, now: float) -> RunRow:
        owned = self.owner is not None
        status = derive_status(
            self.final_status, self.pending_approvals, self.expires_at, now, owned
        )
        return self.row._replace(status=status, owner=self.owner)


class _MemoryStore:
    where = IN_MEMORY
    refusing_reads: str | None = None

    def probe(self) -> None:
        """Always there."""

    def reader(self) -> Self:
        """Itself: its reads run inline, between the writes."""
        return self

    def __init__(self) -> None:
        self._runs: dict[str, _Run] = {}
        self._closed = False

    def _open_runs(self) -> dict[str, _Run]:
        if self._closed:
            raise JournalError("the in-memory journal is closed")
        return self._runs

    def acquire(
        self, run_id: str, owner: str, now: float, ttl: float, top: Lease | None = None
    ) -> tuple[Lease, int]:
        runs = self._open_runs()
        run, above = runs.get(run_id), self._above(run_id)
        state = run.state() if run else None
        check_acquire(state, run_id, owner, now, self.where, above, top)
        assert run is not None
        previous = run.owner
        run.owner, run.token, run.expires_at = owner, run.token + 1, now + ttl
        if previous is not None:  # its nested runs' leases go with it (see Store)
            nested = nested_under(run_id)
            for held in runs.values():
                taken = held.owner == previous and held.final_status is None
                if taken and held.row.run_id.startswith(nested):
                    held.owner, held.token, held.expires_at = None, held.token + 1, now
        lease = Lease(run_id=run_id, owner=owner, token=run.token, expires_at=now + ttl)
        return lease, len(run.records)

    def _above(self, run_id: str) -> LeaseState | None:
        """The row of the top run ``run_id`` belongs to (``None``: a top-level run)."""
        top = top_run_id(run_id)
        held = None if top is None else self._runs.get(top)
        return None if held is None else held.state()

    def commit(self, batch: Batch, now: float) -> Refused:
        runs = self._open_runs()
        taken: dict[str, JournalError] = {}
        for first, row, _, lease, top in batch.creations:
            try:  # a nested run is started by its top run's owner only
                check_above(self._above(row.run_id), lease, top)
            except JournalError as exc:
                taken[row.run_id] = exc
                continue
            if row.run_id in runs:
                taken[row.run_id] = JournalError(
                    f"journal {self.where} already has a run {row.run_id!r}"
                )
                continue
            run = _Run(row=row, owner=lease.owner, token=lease.token, expires_at=lease.expires_at)
            run.records.append(first)
            runs[row.run_id] = run
        records = batch.records
        states = {r: runs[r].state() for r in {p.run_id for p in records} if r in runs}
        accepted, refused = plan_commit(records, states, self.where)
        for written in accepted:
            _apply(runs[written[0].run_id], written, now)
        lost: dict[LeaseKey, JournalError] = {}
        for lease, expires_at in batch.renewals:
            held = runs.get(lease.run_id)
            try:
                check_owner(held.state() if held else None, lease, self.where)
            except JournalError as exc:
                lost[(lease.run_id, lease.token)] = exc
            else:
                assert held is not None
                held.expires_at = expires_at
        for lease in batch.releases:
            held = runs.get(lease.run_id)
            if held is not None and held.token == lease.token and held.owner == lease.owner:
                held.owner, held.expires_at = None, now
        return Refused(refused, taken, lost)

    def read(self, run_id: str, after: int) -> list[tuple[int, float, bytes]]:
        run = self._open_runs().get(run_id)
        if run is None:
            return []
        return [(p.seq, p.recorded_at, p.body) for p in run.records[after:]]

    def read_kinds(self, run_id: str, kinds: tuple[str, ...]) -> list[bytes]:
        run = self._open_runs().get(run_id)
        return [p.body for p in run.records if p.kind in kinds] if run else []

    def awaiting(self, kinds: tuple[str, ...]) -> list[bytes]:
        runs = [r for r in self._open_runs().values() if r.final_status is None]
        runs = [r for r in runs if r.pending_approvals > 0]
        runs.sort(key=lambda run: (run.row.started_at, run.row.run_id))
        return [p.body for run in runs for p in run.records if p.kind in kinds]

    def keyed(self, run_id: str, key: str) -> list[bytes]:
        run = self._open_runs().get(run_id)
        return [p.body for p in run.records if p.key == key] if run else []

    def run_row(self, run_id: str, now: float) -> RunRow | None:
        run = self._open_runs().get(run_id)
        return lapsed([run.listed(now)])[0] if run else None

    def run_snapshot(
        self, run_id: str, now: float
    ) -> tuple[RunRow | None, list[tuple[int, float, bytes]]]:
        return self.run_row(run_id, now), self.read(run_id, 0)  # (inline: nothing in between)

    def list_runs(
        self, status: RunStatus | None, limit: int | None, now: float, session: str | None
    ) -> list[RunRow]:
        rows = lapsed([run.listed(now) for run in self._open_runs().values()])
        rows = [
            row
            for row in rows
            if NESTED_MARK not in row.run_id  # top-level runs only
            and (status is None or row.status == status)
            and (session is None or row.session == session)
        ]
        rows.sort(key=lambda row: (row.started_at, row.run_id), reverse=True)
        return rows if limit is None else rows[:limit]

    def close(self) -> None:
        self._closed = True


def _apply(run: _Run, records: list[Pending], now: float) -> None:
    run.records.extend(records)
    for pending in records:
        run.pending_approvals += pending.approvals_delta
        if pending.final_status is not None:
            run.final_status = pending.final_status
    run.row = run.row._replace(updated_at=now)


@final
class MemoryJournal(BufferedJournal):
    """A journal in this process's memory: the library default (``journal=None``).

    It has the semantics of the durable ones (leases, fencing, sequence numbers,
    look-ups, sessions), so code tested against it behaves the same on SQLite
    or PostgreSQL; only a crash of the process loses it.
    """

    def __init__(self, *, clock: Callable[[], float] | None = None) -> None:
        super().__init__(_MemoryStore(), clock=clock, threaded=False)
