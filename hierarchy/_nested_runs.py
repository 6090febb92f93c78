"""The runs of a nested team (a ``TeamWorker``'s steps), journaled with the run they serve.

A step of a journaled run given to a team worker runs its child team as a run of its
own, recorded in the same journal as any run is (plans, step reports, model replies,
tool intents and results, events), under an id derived from the step it serves (see
``regiment.journal.nested_run_id``): its parent run, plan version, step and attempt.
It is owned by the process that owns the parent run (the same owner, its own lease,
kept alive by its planner's heartbeat as every journaled run's is). A process that takes
the top run over takes its nested runs with it (the journal's ``acquire``): the old
owner's late writes to them are refused, and the new owner takes each up at once.

When a resumed parent sends the step again (it had not committed), the step finds its
nested run in the journal and resumes it instead of starting it afresh: the steps it
committed are not done again, its journaled model replies and tool results are
replayed, and a tool call in flight at the crash runs again with the same idempotency
key. A nested run that had finished (the parent died before it committed the step)
gives its journaled result back at once.

A run without a journal is untouched: its nested runs start as they always did.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

import anyio
import msgspec

from regiment.errors import JournalError, LeaseHeld, RunCancelled, RunError, UnknownRun
from regiment.hierarchy._approvals import StepAt
from regiment.hierarchy._messages import StepAllowance
from regiment.hierarchy._result import RunResult
from regiment.hierarchy.run._channel import RunChannel
from regiment.hierarchy.run._journaling import RunJournal
from regiment.hierarchy.run._resume import Opened, reopen
from regiment.journal import Entry, RunFinished, nested_run_id, patient_reads
from regiment.telemetry import chosen_child

_log = logging.getLogger("regiment.run")

if TYPE_CHECKING:
    from anyio.streams.memory import MemoryObjectReceiveStream

    from regiment.hierarchy._running import RunningTeam
    from regiment.hierarchy.events import Event

__all__ = ("open_nested",)


@asynccontextmanager
async def open_nested(
    child: RunningTeam,
    parents: Mapping[str, RunChannel],
    goal: str,
    allowance: StepAllowance,
    parent: StepAt,
    attempt: int,
) -> AsyncIterator[Opened]:
    """Run ``parent``'s step on ``child`` (its ``attempt``-th try), journaled with the run
    above when that run is (``parents``: the parent team's runs in progress)."""
    above = parents.get(parent.run_id)
    journal = None if above is None else above.journal
    # The run above's deps are its nested runs' too (not journaled, as a run's are not).
    deps = None if above is None or above.calls is None else above.calls.deps
    # Tied to the step it serves before its planner starts (its first call may draw).
    link = functools.partial(
        _linked_above, above=above, parent=parent, attempt=attempt, child=child
    )
    if journal is None:  # not journaled: a new run, as always
        opened = child._open(goal, allowance, streaming=False, deps=deps, parent=parent, link=link)
        async with opened as pair:
            yield pair
        return
    run_id = nested_run_id(parent.run_id, parent.plan_version, parent.step_id, attempt)
    # Only a resumed run above can have run the step before (a new one: no read).
    entries = await _entries(journal, run_id) if journal.resume is not None else ()
    last = entries[-1].record if entries else None
    if isinstance(last, RunFinished):  # the run above died before it committed the step
        channel, events = _finished(last)
        if channel.result is not None:  # its report counts what the run spent
            journal.took_nested(parent.plan_version, parent.step_id, attempt)
        with events:
            yield channel, events
        return
    if entries:
        nested = await _resumed(journal, child, run_id, entries, deps)
    else:
        with anyio.CancelScope(shield=True):  # seen through: see _created
            nested = await _created(journal, child, run_id, goal, deps, parent.run_id)
    started = False
    try:
        opened = child._open(
            goal, allowance, streaming=False, deps=deps, resumed=nested, parent=parent, link=link
        )
        async with opened as pair:
            started = True
            journal.took_nested(parent.plan_version, parent.step_id, attempt)
            yield pair
    except BaseException as exc:
        if not started:  # cut before the run began: let go of it now
            await _unbegun(nested, cut=isinstance(exc, anyio.get_cancelled_exc_class()))
        raise


async def _created(
    journal: RunJournal, child: RunningTeam, run_id: str, goal: str, deps: object, above: str
) -> RunJournal:
    """A new nested run, recorded; to be called shielded. Once queued, its record is
    written with some group commit even if the step is cut while it waits: seen through,
    the run reaches the code that ends it (as cancelled), as a top run's creation is
    (``open_channel``). Cut there, it stayed listed as running, then stalled. Traced, its
    root span's ids are chosen and journaled first: a resume after a crash ends that span
    (its process left it open), under the step it served then."""
    chosen = chosen_child()  # under the step it serves, current here
    nested = await RunJournal.create(
        journal.store,
        child.team,
        run_id,
        goal,
        None,
        journal.lease.owner,
        deps,
        ttl=journal.ttl,
        trace=(None, None) if chosen is None else chosen[1:],
        parent=above,
        top=journal.top,
    )
    nested.root_span = None if chosen is None else chosen[0]
    return nested


async def _unbegun(nested: RunJournal, *, cut: bool) -> None:
    """Let go of a nested run that never began; one ``cut`` (cancelled) ends cancelled,
    as a run cancelled later does, rather than stay listed as stalled for ever."""
    if cut:
        why = "RunCancelled: the step it serves was cut before its run began"
        nested.buffer(RunFinished(run_id=nested.run_id, status="cancelled", error=why))
    with anyio.CancelScope(shield=True):
        try:
            await nested.close()
        except JournalError as exc:  # the step's own outcome says why it ended; this says
            # that the nested run's record may not show it (a resume of the top run does)
            _log.warning(
                "nested run %s, cut before it began, could not be closed in the journal: %s",
                nested.run_id,
                exc,
            )


def _linked_above(
    channel: RunChannel,
    *,
    above: RunChannel | None,
    parent: StepAt,
    attempt: int,
    child: RunningTeam,
) -> None:
    """The nested run's steps start no tool once the run above has fenced the step it
    serves (``StepFence.above``), and they and its own calls draw top-ups through that
    step's share once their own run's budget is short (``TopUps.above``), within its
    team's own budget: set before its planner starts (its plan call may draw)."""
    if above is not None:
        channel.fence.above = (above.fence, parent.plan_version)
        top_ups = channel.fence.top_ups
        top_ups.above = (above.fence.top_ups, (parent.plan_version, parent.step_id, attempt))
        top_ups.own = child.team.budget


async def _entries(journal: RunJournal, run_id: str) -> tuple[Entry, ...]:
    try:
        with patient_reads():  # the run's own: it waits for a restarting server
            return await journal.store.read(run_id)
    except UnknownRun:
        return ()


async def _resumed(
    journal: RunJournal,
    child: RunningTeam,
    run_id: str,
    entries: tuple[Entry, ...],
    deps: object,
) -> RunJournal:
    """The nested run, taken up by the run above's owner to finish it.

    The take-over of the top run took the old owner's lease of it already, so it is
    free at once; another process's short hold (a decision recorded on it) is waited
    out, twice a lease's length at most.
    """
    ttl = journal.ttl
    deadline = anyio.current_time() + 2 * ttl
    while True:
        try:
            # force: the run above was checked against its team, nested teams included
            nested, _ = await reopen(
                journal.store,
                child.team,
                run_id,
                owner=journal.lease.owner,
                deps=deps,
                force=True,
                ttl=ttl,
                entries=entries,
                above=journal.top,
            )
        except LeaseHeld:
            if anyio.current_time() > deadline:
                raise
            await anyio.sleep(ttl / 10)
            continue
        # Its root span hangs under the step it serves now, not under its first root.
        nested.resume = (nested.resume or (1, None))[0], None
        return nested


def _finished(record: RunFinished) -> tuple[RunChannel, MemoryObjectReceiveStream[Event]]:
    """A channel holding a finished nested run's journaled result (or error), closed."""
    channel, events = RunChannel.open(streaming=False)
    if record.result:
        channel.result = msgspec.convert(record.result, RunResult)
    elif record.status == "cancelled":
        channel.error = RunCancelled(record.error or "the nested run was cancelled")
    else:
        channel.error = RunError(record.error or f"the nested run ended {record.status}")
    channel.done = True
    channel.send.close()
    return channel, events
