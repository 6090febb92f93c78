"""What a journal hands back: leases, run listings, entries, keyed look-ups, sessions."""

from __future__ import annotations

import shlex
from datetime import datetime
from typing import Literal, TypeAlias

import msgspec

from regiment.errors import UnknownRun
from regiment.journal._records import (
    ApprovalDecided,
    ApprovalRequested,
    Record,
    ToolCallFinished,
    ToolCallStarted,
)

__all__ = (
    "CommittedStep",
    "Entry",
    "JournaledApproval",
    "JournaledCall",
    "Lease",
    "RunInfo",
    "RunStatus",
    "SessionRun",
    "IN_MEMORY",
    "unknown_run",
)

RunStatus: TypeAlias = Literal[
    "running", "stalled", "paused", "completed", "partial", "failed", "cancelled"
]
"""``running``: its owner's lease is alive. ``stalled``: not finished and nobody
holds a live lease (the owner died or let go; an owner that was a process of this
machine and is gone counts as dead at once, its lease lapsed); resume it (also a run
with an undecided approval whose process died before it got to its pause). ``paused``:
not finished and a tool call waits for a decision (the word a paused ``RunResult``, the
service and the README use; ``list_runs(status=...)`` takes ``awaiting_approval``, this
status's name before, too). The rest: how it finished."""


class Lease(msgspec.Struct, frozen=True, kw_only=True):
    """The right to write a run, held by one owner until ``expires_at``.

    Every write carries it; the journal rejects a write whose ``token`` is not
    the run's current one (a later owner took over: this one is a zombie).

    Attributes:
        run_id: the run.
        owner: who holds it, e.g. ``"host:pid"``.
        token: the fencing token; every acquisition of the run increments it.
        expires_at: clock seconds after which another owner may take the run over.
    """

    run_id: str
    owner: str
    token: int
    expires_at: float


class RunInfo(msgspec.Struct, frozen=True, kw_only=True):
    """One line of ``list_runs``."""

    run_id: str
    team: str
    goal: str
    status: RunStatus
    started_at: datetime
    updated_at: datetime
    session: str | None = None


class Entry(msgspec.Struct, frozen=True, kw_only=True):
    """A record with its per-run sequence number (dense from 1) and when it was written."""

    seq: int
    recorded_at: datetime
    record: Record


class JournaledCall(msgspec.Struct, frozen=True, kw_only=True):
    """A tool call as journaled: its intent, and its result unless it was in flight."""

    intent: ToolCallStarted
    result: ToolCallFinished | None = None


class JournaledApproval(msgspec.Struct, frozen=True, kw_only=True):
    """An approval as journaled: its request, and its decision once one was taken."""

    request: ApprovalRequested
    decision: ApprovalDecided | None = None


class CommittedStep(msgspec.Struct, frozen=True, kw_only=True):
    """A step an earlier run of a session committed."""

    plan_version: int
    step_id: str
    worker: str
    output: str


class SessionRun(msgspec.Struct, frozen=True, kw_only=True):
    """An earlier run of a session, for the planner's context.

    Attributes:
        answer: its answer, or ``None`` if it has not finished.
        steps: its committed steps, in commit order.
    """

    run_id: str
    goal: str
    status: RunStatus
    started_at: datetime
    answer: str | None = None
    steps: tuple[CommittedStep, ...] = ()


IN_MEMORY = "(in memory)"
"""A ``MemoryJournal``'s ``where``: no other process, so no command, can read it."""


def unknown_run(where: str, run_id: str) -> UnknownRun:
    """The error for a run id journal ``where`` does not have; the command it suggests
    names that journal, so it lists this one's runs wherever it is typed (an in-memory
    journal's are listed in code only)."""
    if where == IN_MEMORY:
        return UnknownRun(f"journal {where} has no run {run_id!r}; journal.list_runs() lists them")
    return UnknownRun(
        f"journal {where} has no run {run_id!r}; "
        f"`regiment runs --journal {shlex.quote(where)}` lists them"
    )
