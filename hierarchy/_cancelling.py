"""Cancelling a paused run (or one stalled mid-work): it ends ``cancelled``, and what it
waited for is withdrawn.

A run that paused for approvals has no task to cancel: its state is the journal's (or,
without one, its requests on the team's desk). Cancelling it writes its end there, under
the run's lease, as a live run's cancel does: a ``RunFailed`` (``RunCancelled``) event
carrying what the run got to, and the journal's ``RunFinished`` with status
``cancelled``, so it is over (a resume is refused) and its requests are no longer
pending: a decision on one is refused, saying its run ended (cancelled).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

import anyio
import msgspec

from regiment.errors import AlreadyFinished, LeaseHeld, UnknownRun
from regiment.hierarchy._approvals import ApprovalDesk
from regiment.hierarchy._replay import event_record
from regiment.hierarchy._result import RunResult
from regiment.hierarchy._stalled_end import stalled_ending
from regiment.hierarchy.events import RunCompleted, RunFailed
from regiment.hierarchy.run._brief_holds import BriefHold, wait_brief_hold
from regiment.hierarchy.run._journaling import LEASE_TTL, owner_name
from regiment.journal import (
    Entry,
    EventRecorded,
    Journal,
    Lease,
    RunResumed,
    StepDispatched,
    nested_run_id,
    top_run_id,
)
from regiment.journal import RunFinished as JournalFinished
from regiment.tools import Deny

__all__ = ("cancel_paused",)

_log = logging.getLogger("regiment.hierarchy.approvals")
_TRIES = 20  # times 50 ms: a decision being recorded holds the lease for one write


async def cancel_paused(
    desk: ApprovalDesk, journal: Journal | None, run_id: str, reason: str
) -> RunFailed | None:
    """End paused run ``run_id`` ``cancelled``; its last event, or ``None`` if it is not
    a paused run (live in this process or another, ended, or never paused). A run stalled
    mid-work (its process died) is ended so too, from its journal alone: nothing of it
    runs again, no model is asked (``stalled_ending``).

    Raises:
        UnknownRun: the journal has no such run.
        LeaseHeld: the run was stalled mid-work, and another process holds it now (took
            it up since): the message names that process.
        JournalError: the journal could not be read or written.
    """
    if top_run_id(run_id) is not None:  # a nested team's run: cancelled with its top run
        return None
    why = "the run was cancelled while it waited for approval" + (f": {reason}" if reason else "")
    withdrawn = Deny(reason=f"withdrawn: {why}; the call never runs")
    kept = desk.pending(run_id)  # a paused run's, without a journal (with one: none)
    for request in kept:
        desk.withdraw(request.request_id, withdrawn)
    if journal is None:
        return RunFailed(run_id=run_id, error_type="RunCancelled", message=why) if kept else None
    status = await _status(journal, run_id)
    if status not in ("paused", "stalled"):
        return None  # (stalled: maybe paused, its requests decided since, not resumed)
    # Stalled mid-work (its process died, not at a pause): ended from its journal alone.
    midwork = (
        status == "stalled" and _ending(run_id, why, await journal.read(run_id), False) is None
    )
    if midwork:
        why = "the run was cancelled after its process stopped mid-work" + (
            f": {reason}" if reason else ""
        )
    with BriefHold(run_id, "being cancelled"):  # a resume meeting its lease waits it out
        lease = await _lease(journal, run_id, refuse=midwork)
        if lease is None:
            return None
        try:
            paused = (await journal.get_run(run_id)).status == "paused"
            entries = await journal.read(run_id)
            ended = _ending(run_id, why, entries, paused)
            if ended is None and midwork:  # (its lease is ours: no process runs it)
                ended = await stalled_ending(journal, run_id, entries, why)
            if ended is None:  # resumed meanwhile, or stalled while it ran: not paused
                return None
            await _end_nested(journal, lease, run_id, entries, why)
            await journal.append(lease, event_record(run_id, ended))
            error = f"RunCancelled: {why}"
            record = JournalFinished(run_id=run_id, status="cancelled", error=error)
            await journal.append(lease, record, durable=True)
        finally:
            await journal.release(lease)
    _log.info(
        "run %s was cancelled %s",
        run_id,
        "after its process stopped mid-work" if midwork else "while paused for approval",
    )
    return ended


async def _end_nested(
    journal: Journal, above: Lease, run_id: str, entries: Sequence[Entry], why: str
) -> None:
    """End ``cancelled`` the unfinished runs of nested teams under run ``run_id`` (its
    ``entries``; ``above``: the lease of its top run, which makes them this owner's), the
    deepest first: the run of a step paused with it, its requests withdrawn. Left alone,
    each listed ``stalled`` (its answer: waits to be resumed), though its top run had ended
    and it could never be resumed."""
    seen: set[str] = set()
    for entry in entries:
        if not isinstance(step := entry.record, StepDispatched):
            continue
        nested = nested_run_id(run_id, step.plan_version, step.step_id, step.attempt)
        if nested in seen:
            continue
        seen.add(nested)
        try:
            if (await journal.get_run(nested)).status in _FINAL:
                continue
            lease = await journal.acquire(nested, owner=owner_name(), ttl=LEASE_TTL, above=above)
        except UnknownRun:  # the step went to a worker, not to a nested team
            continue
        except (AlreadyFinished, LeaseHeld) as exc:  # ended meanwhile; its top run is ours
            _log.warning("run %s (nested) was not ended with its top run: %s", nested, exc)
            continue
        try:
            below = await journal.read(nested)
            await _end_nested(journal, above, nested, below, why)
            ended = _ending(nested, why, below, False)  # at its pause, else from its journal
            ended = ended or await stalled_ending(journal, nested, below, why)
            await journal.append(lease, event_record(nested, ended))
            error = f"RunCancelled: {why} (with its top run)"
            await journal.append(
                lease, JournalFinished(run_id=nested, status="cancelled", error=error)
            )
        finally:
            await journal.release(lease)  # (its release commits what it appended)


_FINAL = frozenset(("completed", "partial", "failed", "cancelled"))


async def _status(journal: Journal, run_id: str) -> str:
    """The run's status; ``running`` while a decision being recorded here holds its lease
    (its journal lists it so for that moment): waited out, then read again."""
    status = (await journal.get_run(run_id)).status
    if status != "running":
        return status
    try:
        await wait_brief_hold(run_id, LeaseHeld(f"run {run_id!r} is running"))
    except LeaseHeld:
        return status  # live (here or in another process), or held on: not paused
    return (await journal.get_run(run_id)).status


async def _lease(journal: Journal, run_id: str, *, refuse: bool = False) -> Lease | None:
    """The run's lease; ``None`` if the run ended, or is live in another process (a
    resume there; with ``refuse``, ``LeaseHeld`` naming its owner, raised: a run stalled
    mid-work that another process took up); one a decider holds for its write is waited out."""
    for attempt in range(_TRIES):
        try:
            return await journal.acquire(run_id, owner=owner_name(), ttl=LEASE_TTL)
        except AlreadyFinished:
            return None
        except LeaseHeld:
            if attempt == _TRIES - 1:
                if refuse:
                    raise
                return None
        await anyio.sleep(0.05)
    return None


def _ending(run_id: str, why: str, entries: Sequence[Entry], paused: bool) -> RunFailed | None:
    """The cancelled run's last event, with what it got to by its pause (the result of
    its last ``RunCompleted``, the pause's); ``None`` if the run is not ``paused`` (a
    request pending) and its last stop was no pause (a ``stalled`` run that ran since)."""
    result: RunResult | None = None
    for entry in entries:
        record = entry.record
        if isinstance(record, EventRecorded) and record.kind == "RunCompleted":
            result = msgspec.convert(record.event, RunCompleted).result
        elif isinstance(record, RunResumed):
            result = None  # it went on after that stop
    if not paused and (result is None or result.status != "paused"):
        return None
    if result is None:
        return RunFailed(run_id=run_id, error_type="RunCancelled", message=why)
    return result.as_failed("RunCancelled", why)
