"""The store both SQL backends share: one schema, one set of statements, one set of rules.

A backend brings its connection, how it opens a write transaction (SQLite:
``BEGIN IMMEDIATE``, which takes the file's write lock; PostgreSQL: a
transaction whose ``SELECT ... FOR UPDATE`` locks the run's row), its
placeholder style and the exception classes of its driver.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, suppress
from typing import Any

from regiment.errors import JournalError
from regiment.journal._nesting import NESTED_MARK, top_run_id
from regiment.journal._schema import RecordMarks
from regiment.journal._store import (
    Batch,
    Creation,
    LeaseKey,
    LeaseState,
    Pending,
    Refused,
    RunRow,
    check_above,
    check_acquire,
    check_owner,
    lapsed,
    nested_under,
    plan_commit,
    with_tops,
)
from regiment.journal._views import Lease, RunStatus

__all__ = ("SqlStore",)

_INSERT_RUN = (
    "INSERT INTO journal_runs (run_id, team, goal, session, config_hash, started_at, updated_at,"
    " owner, token, lease_expires_at, last_seq) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
    " ON CONFLICT (run_id) DO NOTHING"
)
_RELEASE = (
    "UPDATE journal_runs SET owner = NULL, lease_expires_at = ?"
    " WHERE run_id = ? AND token = ? AND owner = ?"
)
# The nested runs (at any depth) whose leases the run's previous owner held: taken with it.
_HELD_NESTED = " WHERE substr(run_id, 1, ?) = ? AND owner = ? AND final_status IS NULL"
_TAKE_NESTED = (
    "UPDATE journal_runs SET owner = NULL, token = token + 1, lease_expires_at = ?" + _HELD_NESTED
)
_INSERT_RECORD = (
    "INSERT INTO journal_records (run_id, seq, kind, key, recorded_at, body)"
    " VALUES (?, ?, ?, ?, ?, ?)"
)
_ADVANCE = (
    "UPDATE journal_runs SET last_seq = ?, updated_at = ?,"
    " final_status = COALESCE(?, final_status), pending_approvals = pending_approvals + ?"
    " WHERE run_id = ?"
)
_LISTED = (
    "SELECT run_id, team, goal, session, status, started_at, updated_at, owner FROM ("
    "SELECT run_id, team, goal, session, started_at, updated_at, owner, CASE"
    " WHEN final_status IS NOT NULL THEN final_status"
    " WHEN owner IS NOT NULL AND lease_expires_at > ?"
    " THEN CASE WHEN pending_approvals > 0 THEN 'paused' ELSE 'running' END"
    " WHEN pending_approvals > 0 AND owner IS NULL THEN 'paused'"
    " ELSE 'stalled' END AS status FROM journal_runs) AS listed"
)
_NEWEST = " ORDER BY started_at DESC, run_id DESC"
_OWNED = "owner IS NOT NULL"  # (a 'running' or 'paused' run's: its lease is alive)
_LAPSED: dict[str | None, str] = {
    "stalled": "status = 'stalled'",
    "paused": "status = 'paused' AND owner IS NULL",  # at its pause, its lease given up
}
_Row = tuple[int, float, bytes]  # a record as read: (seq, recorded_at, body)
_RECORDS = (
    "SELECT seq, recorded_at, body FROM journal_records WHERE run_id = ? AND seq > ? ORDER BY seq"
)
_NESTED = f"%{NESTED_MARK}%"  # a nested run's id (the mark is no LIKE wildcard)


_NO_LIMIT = 2**63 - 1  # the largest LIMIT SQLite and PostgreSQL take
_CHUNK = 500  # run ids per IN (...) list, well below every driver's parameter limit


def _touched(batch: Batch) -> list[str]:
    """The runs whose rows ``batch`` reads or writes, the new ones' top runs included, sorted."""
    runs = {pending.run_id for pending in batch.records}
    runs.update(lease.run_id for lease, _ in batch.renewals)
    runs.update(lease.run_id for lease in batch.releases)
    return with_tops([*runs, *(creation.row.run_id for creation in batch.creations)])


def _renewable(
    renewals: Sequence[tuple[Lease, float]], states: dict[str, LeaseState], where: str
) -> tuple[list[tuple[float, str]], dict[LeaseKey, JournalError]]:
    """Of ``renewals``, the leases still their runs' own (``states``: the runs' rows), as
    (expires at, run id), and the others, with why."""
    lost: dict[LeaseKey, JournalError] = {}
    kept: list[tuple[float, str]] = []
    for lease, expires_at in renewals:
        try:
            check_owner(states.get(lease.run_id), lease, where)
        except JournalError as exc:
            lost[(lease.run_id, lease.token)] = exc
        else:
            kept.append((expires_at, lease.run_id))
    return kept, lost


def _advance(records: Sequence[Pending], now: float) -> tuple[object, ...]:
    final = next((p.final_status for p in records if p.final_status), None)
    delta = sum(p.approvals_delta for p in records)
    return (records[-1].seq, now, final, delta, records[0].run_id)


class SqlStore(ABC):
    """A ``Store`` over a DB-API connection; subclasses open it and name its dialect."""

    where: str
    refusing_reads: str | None = None
    _for_update = ""
    _SNAPSHOT = "BEGIN"  # a read transaction: its statements read one snapshot
    _marks: RecordMarks  # the kinds of record the journal says it holds (see read_marks)

    @abstractmethod
    def _cursor(self) -> Any:
        """A cursor of the open connection (``JournalError`` if it is closed)."""

    @abstractmethod
    def _write_transaction(self) -> AbstractContextManager[None]:
        """Commit on success, roll back on an exception."""

    @abstractmethod
    def _sql(self, statement: str) -> str:
        """``statement`` (written with ``?`` placeholders) in the driver's style."""

    @abstractmethod
    def _driver_errors(self) -> tuple[type[Exception], ...]:
        """The exceptions of the driver to report as ``JournalError``."""

    @contextmanager
    def _guard(self, action: str) -> Iterator[None]:
        try:
            yield
        except self._driver_errors() as exc:
            raise JournalError(f"journal {self.where}: {action} failed: {exc}") from exc

    def _execute(self, statement: str, params: Sequence[object] = ()) -> list[tuple[Any, ...]]:
        cursor = self._cursor()
        try:
            cursor.execute(self._sql(statement), params)
        except BaseException:
            # Its statement, held by the traceback, would keep a closed SQLite connection's
            # files open (a zombie until it is finalized): a failed open kept the journal.
            cursor.close()
            raise
        return list(cursor.fetchall()) if cursor.description is not None else []

    def acquire(
        self, run_id: str, owner: str, now: float, ttl: float, top: Lease | None = None
    ) -> tuple[Lease, int]:
        top_id = top_run_id(run_id)
        with self._guard(f"acquiring run {run_id!r}"), self._write_transaction():
            states = self._states(with_tops([run_id]))  # a nested run's top run locked first
            state = states.get(run_id)
            above = None if top_id is None else states.get(top_id)
            check_acquire(state, run_id, owner, now, self.where, above, top)
            assert state is not None
            self._execute(
                "UPDATE journal_runs SET owner = ?, token = ?, lease_expires_at = ? WHERE run_id = ?",
                (owner, state.token + 1, now + ttl, run_id),
            )
            if state.owner is not None:  # its nested runs' leases go with it (see Store)
                self._take_nested(run_id, state.owner, now)
        lease = Lease(run_id=run_id, owner=owner, token=state.token + 1, expires_at=now + ttl)
        return lease, state.last_seq

    def _take_nested(self, run_id: str, owner: str, now: float) -> None:
        """Free the nested runs of ``run_id`` (any depth) whose leases ``owner`` held."""
        nested = nested_under(run_id)
        held = (len(nested), nested, owner)
        if self._for_update:  # their rows locked in run id order, as every write locks rows
            self._execute(
                f"SELECT run_id FROM journal_runs{_HELD_NESTED} ORDER BY run_id{self._for_update}",
                held,
            )
        self._execute(_TAKE_NESTED, (now, *held))

    def read_marks(self) -> None:
        """Learn which kinds of record the journal holds, once open (see ``RecordMarks``)."""
        self._marks = RecordMarks(self._execute, self.where)

    def commit(self, batch: Batch, now: float) -> Refused:
        self._marks.pending.clear()  # (of a commit that failed)
        with self._guard(f"writing {batch.size()} records"), self._write_transaction():
            # Every row the batch touches, locked at once in run id order (a nested run's
            # top run's before it), so no two writers wait for each other.
            states = self._states(_touched(batch))
            taken = self._create(batch.creations, states)
            if new := sorted({c.row.run_id for c in batch.creations} - taken.keys()):
                states.update(self._states(new))  # inserted (and so locked) just now
            refused: dict[LeaseKey, JournalError] = {}
            if batch.records:
                accepted, refused = plan_commit(batch.records, states, self.where)
                if accepted:
                    self._insert([pending for records in accepted for pending in records])
                    self._cursor().executemany(
                        self._sql(_ADVANCE), [_advance(records, now) for records in accepted]
                    )
            lost = self._renew(batch.renewals, states)
            if batch.releases:
                self._cursor().executemany(
                    self._sql(_RELEASE),
                    [(now, lease.run_id, lease.token, lease.owner) for lease in batch.releases],
                )
        self._marks.settle()  # committed: not marked again
        return Refused(refused, taken, lost)

    def _renew(
        self, renewals: Sequence[tuple[Lease, float]], states: dict[str, LeaseState]
    ) -> dict[LeaseKey, JournalError]:
        """Extend the leases that are still their runs' own (``states``: the runs' rows);
        the others, and why."""
        kept, lost = _renewable(renewals, states, self.where)
        if kept:
            self._cursor().executemany(
                self._sql("UPDATE journal_runs SET lease_expires_at = ? WHERE run_id = ?"), kept
            )
        return lost

    def _create(
        self, creations: Sequence[Creation], states: dict[str, LeaseState]
    ) -> dict[str, JournalError]:
        """Insert the new runs whose id is free (another process may have taken one: no
        error that would fail the whole batch) and their first records; the taken ones
        (``states``: the rows of the nested ones' top runs)."""
        taken: dict[str, JournalError] = {}
        cursor = self._cursor()
        for _, row, config_hash, lease, top in creations:
            top_id = top_run_id(row.run_id)
            try:  # a nested run is started by its top run's owner only
                check_above(None if top_id is None else states.get(top_id), lease, top)
            except JournalError as exc:
                taken[row.run_id] = exc
                continue
            cursor.execute(
                self._sql(_INSERT_RUN),
                (
                    row.run_id,
                    row.team,
                    row.goal,
                    row.session,
                    config_hash,
                    row.started_at,
                    row.updated_at,
                    lease.owner,
                    lease.token,
                    lease.expires_at,
                    1,
                ),
            )
            if cursor.rowcount != 1:
                taken[row.run_id] = JournalError(
                    f"journal {self.where} already has a run {row.run_id!r}"
                )
        firsts = [creation.first for creation in creations if creation.row.run_id not in taken]
        if firsts:
            self._insert(firsts)
        return taken

    def _states(self, run_ids: list[str]) -> dict[str, LeaseState]:
        """The runs' rows, locked in run id order (so two writers cannot deadlock)."""
        states: dict[str, LeaseState] = {}
        for start in range(0, len(run_ids), _CHUNK):
            chunk = run_ids[start : start + _CHUNK]
            marks = ", ".join("?" for _ in chunk)
            statement = (
                "SELECT run_id, owner, token, lease_expires_at, final_status, last_seq"
                f" FROM journal_runs WHERE run_id IN ({marks}) ORDER BY run_id"
            )
            for run_id, *state in self._execute(statement + self._for_update, chunk):
                states[run_id] = LeaseState(*state)
        return states

    def _insert(self, records: Sequence[Pending]) -> None:
        self._marks.mark(self._execute, {p.kind for p in records})
        self._cursor().executemany(
            self._sql(_INSERT_RECORD),
            [(p.run_id, p.seq, p.kind, p.key, p.recorded_at, p.body) for p in records],
        )

    def read(self, run_id: str, after: int) -> list[tuple[int, float, bytes]]:
        with self._guard(f"reading run {run_id!r}"):
            rows = self._execute(_RECORDS, (run_id, after))
        return [(seq, at, bytes(body)) for seq, at, body in rows]

    def read_kinds(self, run_id: str, kinds: tuple[str, ...]) -> list[bytes]:
        marks = ", ".join("?" for _ in kinds)
        with self._guard(f"reading run {run_id!r}"):
            rows = self._execute(
                "SELECT body FROM journal_records"
                f" WHERE run_id = ? AND kind IN ({marks}) ORDER BY seq",
                (run_id, *kinds),
            )
        return [bytes(body) for (body,) in rows]

    def awaiting(self, kinds: tuple[str, ...]) -> list[bytes]:
        marks = ", ".join("?" for _ in kinds)
        with self._guard("listing pending approvals"):
            rows = self._execute(
                "SELECT r.body FROM journal_runs u JOIN journal_records r ON r.run_id = u.run_id"
                " WHERE u.final_status IS NULL AND u.pending_approvals > 0"
                f" AND r.kind IN ({marks}) ORDER BY u.started_at, u.run_id, r.seq",
                kinds,
            )
        return [bytes(body) for (body,) in rows]

    def keyed(self, run_id: str, key: str) -> list[bytes]:
        with self._guard(f"looking up {key!r} of run {run_id!r}"):
            rows = self._execute(
                "SELECT body FROM journal_records WHERE run_id = ? AND key = ? ORDER BY seq",
                (run_id, key),
            )
        return [bytes(body) for (body,) in rows]

    def run_row(self, run_id: str, now: float) -> RunRow | None:
        with self._guard(f"reading run {run_id!r}"):
            rows = self._execute(_LISTED + " WHERE run_id = ?", (now, run_id))
        return lapsed(rows)[0] if rows else None

    def run_snapshot(self, run_id: str, now: float) -> tuple[RunRow | None, list[_Row]]:
        return _snapshot(self, run_id, now)

    def list_runs(
        self, status: RunStatus | None, limit: int | None, now: float, session: str | None
    ) -> list[RunRow]:
        # Top-level runs only: a nested run is listed through the run it serves.
        where, params = "run_id NOT LIKE ?", list[object]([now, _NESTED])
        if session is not None:
            where, params = "run_id NOT LIKE ? AND session = ?", [now, _NESTED, session]
        # A limit past a 64-bit integer is no limit (the drivers refuse to bind it).
        limit = None if limit is None or limit >= _NO_LIMIT else limit
        cap, capped = (" LIMIT ?", list[object]([limit])) if limit is not None else ("", [])
        if status not in ("running", "stalled", "paused"):  # an owner that is gone: no change
            if status is not None:
                where += " AND status = ?"
                params.append(status)
            with self._guard("listing runs"):
                return lapsed(
                    self._execute(f"{_LISTED} WHERE {where}{_NEWEST}{cap}", params + capped)
                )
        # A run whose lease is alive but whose owner on this machine is gone lists as
        # 'stalled' (see ``lapsed``): each reads every run with a live lease (a few), and the
        # newest ``limit`` of its others (``_LAPSED``), in one statement; the limit holds after.
        statement = f"{_LISTED} WHERE {where} AND status IN ('running', 'paused') AND {_OWNED}"
        args = list(params)
        if status != "running":
            older = f"SELECT * FROM ({_LISTED} WHERE {where} AND {_LAPSED[status]}{_NEWEST}{cap})"
            statement, args = f"{older} AS lapsed UNION ALL {statement}", params + capped + params
        with self._guard("listing runs"):
            rows = [row for row in lapsed(self._execute(statement, args)) if row.status == status]
        rows.sort(key=lambda row: (row.started_at, row.run_id), reverse=True)
        return rows if limit is None else rows[:limit]


def _snapshot(store: SqlStore, run_id: str, now: float) -> tuple[RunRow | None, list[_Row]]:
    """``run_row`` and ``read(run_id, 0)`` in one read transaction (``_SNAPSHOT``), so the
    status is the records' own: never "running" beside the run's final answer."""
    with store._guard(f"reading run {run_id!r}"):
        store._execute(store._SNAPSHOT)
        try:
            rows = store._execute(_LISTED + " WHERE run_id = ?", (now, run_id))
            records = store._execute(_RECORDS, (run_id, 0))
        finally:
            with suppress(JournalError, *store._driver_errors()):  # (a read: nothing lost)
                store._execute("COMMIT")
    return (lapsed(rows)[0] if rows else None), [(s, at, bytes(b)) for s, at, b in records]
