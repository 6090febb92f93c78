"""An approval request found by its id alone, in whichever run of the journal holds it.

A decision posted with no run id (the service's ``POST /approvals/{request_id}``)
names only the request. Looking for it among the pending requests and a run at a
time missed a request of an older run: one already decided answered "unknown"
instead of "already decided". One query by the request's look-up key over the
records finds it in any run; an index of the requests' keys (``INDEX``) keeps it
one look-up. The index is added without a new schema version (to an existing PostgreSQL
journal without blocking its writers: ``_pg_index``): an older regiment
reads and writes a journal that has it as before (it only keeps the index up to
date), and a journal without it (opened read-only, say) is searched all the same.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from regiment.errors import JournalError
from regiment.journal._codec import approval_key
from regiment.journal._lookups import JournalLookups
from regiment.journal._protocol import Journal
from regiment.journal._views import JournaledApproval

if TYPE_CHECKING:
    from regiment.journal._schema import Execute

__all__ = ("CREATE_CONCURRENTLY", "INDEX", "add_index", "find_approval")

INDEX = "journal_records_approval"
# (the kind is written out, not a parameter: a partial index serves only a query that
# names its condition as it is written)
_DEFINITION = f"{INDEX} ON journal_records (key) WHERE kind = 'approval_requested'"
_CREATE = f"CREATE INDEX IF NOT EXISTS {_DEFINITION}"
CREATE_CONCURRENTLY = f"CREATE INDEX CONCURRENTLY IF NOT EXISTS {_DEFINITION}"  # (PostgreSQL)
_PRESENT = {  # whether the journal has the index
    "BLOB": "SELECT name FROM sqlite_master WHERE type = 'index' AND name = ?",
    "BYTEA": "SELECT to_regclass(?)",
}
_FIND = "SELECT run_id FROM journal_records WHERE kind = 'approval_requested' AND key = ? LIMIT 1"


def add_index(execute: Execute, blob: str) -> None:
    """Index the requests' keys, unless the journal has the index; inside the write
    transaction that opens the journal (``blob``: the dialect's type of a record's body,
    ``prepare``'s, which names the dialect)."""
    found = execute(_PRESENT[blob], (INDEX,))
    if not found or found[0][0] is None:
        execute(_CREATE, ())


async def find_approval(journal: Journal, approval_id: str) -> JournaledApproval | None:
    """The request ``approval_id`` and its decision, in whichever run holds it; ``None``
    if no run of ``journal`` ever asked it.

    Raises:
        JournalError: the journal could not be read.
    """
    if not _storable(approval_id):  # no journal holds it (PostgreSQL cannot be asked it)
        return None
    if isinstance(journal, JournalLookups):
        await journal.flush()  # (this process's own writes first)
        run_id = await journal._read(lambda store: _run_holding(store, approval_id))
        return None if run_id is None else await journal.approval(run_id, approval_id)
    # A journal of the user's own make: the runs awaiting a decision, then every run.
    for waiting in await journal.pending_approvals():
        if waiting.approval_id == approval_id:
            return JournaledApproval(request=waiting, decision=None)
    for info in await journal.list_runs():
        found = await journal.approval(info.run_id, approval_id)
        if found is not None:
            return found
    return None


def _storable(text: str) -> bool:
    """Whether every journal can store ``text``: no NUL, and UTF-8 (no lone surrogate)."""
    try:
        text.encode()
    except UnicodeEncodeError:
        return False
    return "\x00" not in text


def _run_holding(store: object, approval_id: str) -> str | None:
    # (imported here: a run with no journal loads neither store, see issue #22)
    from regiment.journal._memory import _MemoryStore
    from regiment.journal._sql import SqlStore

    key = approval_key(approval_id)
    if isinstance(store, SqlStore):
        with store._guard(f"looking up approval request {approval_id!r}"):
            rows = store._execute(_FIND, (key,))
        return str(rows[0][0]) if rows else None
    if isinstance(store, _MemoryStore):
        for run_id, run in store._open_runs().items():
            if any(p.key == key and p.kind == "approval_requested" for p in run.records):
                return run_id
        return None
    raise JournalError(f"journal store {type(store).__name__} cannot look requests up by id")
