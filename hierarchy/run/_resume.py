"""Taking a journaled run over to finish it: what ``RunningTeam.resume`` checks first."""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from datetime import UTC, datetime
from typing import TYPE_CHECKING, TypeAlias

from anyio.streams.memory import MemoryObjectReceiveStream

from regiment.errors import AlreadyFinished, ConfigError, JournalError, LeaseHeld, RunCancelled
from regiment.hierarchy._replay import Replay
from regiment.hierarchy.events import Event
from regiment.hierarchy.run._brief_holds import wait_brief_hold
from regiment.hierarchy.run._channel import RunChannel, RunEnd
from regiment.hierarchy.run._config_diff import changed_parts
from regiment.hierarchy.run._config_hash import config_hashes
from regiment.hierarchy.run._hints import list_advice, nested_refusal, show_advice
from regiment.hierarchy.run._journaling import LEASE_TTL, RunJournal, owner_name
from regiment.hierarchy.run._lender import Lender
from regiment.hierarchy.run._session import session_context
from regiment.hierarchy.run._trace import open_root
from regiment.hierarchy.run._unreplayed import nested_journals
from regiment.hierarchy.workers._journal_calls import RunCalls
from regiment.journal import (
    Entry,
    Journal,
    Lease,
    RunCreated,
    RunFinished,
    RunResumed,
    patient_reads,
)

if TYPE_CHECKING:
    from regiment.hierarchy._result import RunResult
    from regiment.hierarchy._running import RunningTeam
    from regiment.hierarchy._team import Team

__all__ = ("Opened", "finished", "open_channel", "reopen", "reopened")

_log = logging.getLogger("regiment.resume")

Opened: TypeAlias = tuple[RunChannel, MemoryObjectReceiveStream[Event] | RunEnd]
"""A run in progress: its channel, and the stream its events arrive on."""


async def open_channel(
    running: RunningTeam,
    run: tuple[str, str, str | None],
    deps: object,
    resumed: RunJournal | None,
    streaming: bool,
    trace: tuple[str | None, str | None] = (None, None),
    lender: Lender | None = None,
) -> Opened:
    """A run's channel (``run``: id, goal, session), journaled when the team has a journal
    (a new run is recorded durably, leased for the team's ``lease_ttl``; ``trace``: the
    ``traceparent`` of its root span and of that span's parent, recorded so a resume
    continues the trace)."""
    run_id, goal, session = run
    journal, team, ttl = running.journal, running.team, running.lease_ttl
    run_journal, history = resumed, None
    if resumed is not None and resumed.resume is not None:  # (else a new nested run's)
        number, now = resumed.resume[0], datetime.now(UTC)
        own, parent = trace
        resumed.buffer(
            RunResumed(run_id=run_id, number=number, trace=own, trace_parent=parent, resumed_at=now)
        )
        await resumed.flush()  # durably, now: a resume killed at once still counts
    elif journal is not None:
        # A new run's record, once queued, is written with some group commit even if its
        # caller is cancelled while it waits: seen through (with the session's read, the
        # last wait here), the run reaches the code that ends it, as cancelled. Cut here,
        # it stayed listed as running, then stalled, and a resume would have run it.
        with running._spawner.new_cancel_scope(shield=True):
            run_journal = await RunJournal.create(
                journal,
                team,
                run_id,
                goal,
                session,
                owner_name(),
                deps,
                ttl=ttl,
                trace=trace,
                team_file=running.team_file,
            )
            if session is not None:
                history = await session_context(journal, running.sessions, team, session, run_id)
    channel: RunChannel
    events: MemoryObjectReceiveStream[Event] | RunEnd
    if lender is None:
        channel, events = RunChannel.open(streaming=streaming)
    else:  # run(), resume(): nobody reads the events, so no stream is made
        channel, events = RunChannel.lent(lender)
    if session is not None:
        if history is None:
            history = await session_context(journal, running.sessions, team, session, run_id)
        channel.history = history
    channel.calls = RunCalls(run_id, deps) if deps is not None else None
    if run_journal is not None:
        channel.journal, channel.calls = run_journal, run_journal.calls
    return channel, events


@asynccontextmanager
async def reopened(
    running: RunningTeam,
    run_id: str,
    *,
    deps: object,
    force: bool,
    streaming: bool,
    entries: tuple[Entry, ...] | None = None,
) -> AsyncIterator[Opened]:
    """Resume run ``run_id`` on ``running`` (see ``RunningTeam.resume``; ``entries``: its
    journal records if just read, else they are read here)."""
    if running.journal is None:
        raise ConfigError(
            "resume needs the journal the run was recorded in: Team.start(journal=...)"
        )
    journal, created = await reopen(
        running.journal,
        running.team,
        run_id,
        owner=owner_name(),
        deps=deps,
        force=force,
        ttl=running.lease_ttl,
        entries=entries,
    )
    opened = running._open(  # the team's own way to start a run
        created.goal, None, streaming=streaming, session=created.session, resumed=journal
    )
    async with opened as pair:
        yield pair


async def reopen(
    journal: Journal,
    team: Team,
    run_id: str,
    *,
    owner: str,
    deps: object,
    force: bool,
    ttl: float = LEASE_TTL,
    entries: tuple[Entry, ...] | None = None,
    above: Lease | None = None,
) -> tuple[RunJournal, RunCreated]:
    """Check that ``team`` may finish run ``run_id``, take its lease, index its replay
    (``above``: for a nested run, this owner's lease of the top run; else one is refused).

    Raises:
        JournalError: the journal has no such run, or it has finished.
        ConfigError: the team's configuration is not the run's, and ``force`` is false.
        LeaseHeld: another process is running it.
    """
    if (refusal := None if above is not None else nested_refusal(journal, run_id)) is not None:
        raise JournalError(refusal)
    if entries is None:  # else the caller has just read them
        with patient_reads():  # as its acquire, it waits for a restarting server
            entries = await journal.read(run_id)
    if not entries:
        raise JournalError(f"journal {journal.where} has no run {run_id!r}; {list_advice(journal)}")
    created = entries[0].record
    if not isinstance(created, RunCreated):
        raise JournalError(f"run {run_id!r} in {journal.where} does not begin with its creation")
    last = entries[-1].record
    if isinstance(last, RunFinished):
        raise AlreadyFinished(
            f"run {run_id!r} has already finished ({last.status}); there is nothing to "
            f"resume: {show_advice(journal, run_id)}",
            status=last.status,
        )
    if created.team != team.name and not force:
        raise ConfigError(
            f"run {run_id!r} belongs to team {created.team!r}, not {team.name!r}; resume it "
            "with its own team (or pass force=True / --force to continue it anyway)"
        )
    _same_config(created, team, force=force)
    lease = await _acquire(journal, run_id, owner, ttl, above)
    # Read (maybe by the caller) before the lease was ours: another resume may have gone
    # on with the run since, and paused it again. Its records are this one's to replay.
    with patient_reads():
        newer = await journal.read(run_id, after=entries[-1].seq)
    entries = (*entries, *newer)
    replay = Replay.of(entries)
    await nested_journals(journal, run_id, replay, team.workers)  # (counted as it ends)
    run_journal = RunJournal(journal, lease, run_id, replay=replay, deps=deps, ttl=ttl, top=above)
    resumes = sum(isinstance(entry.record, RunResumed) for entry in entries)
    run_journal.resume = (resumes + 1, created.trace)
    root = open_root(entries)
    if root is not None and above is not None:  # (its resume's root is a new span under
        root = dataclasses.replace(root, nested=True)  # the step it serves: this one ends)
    run_journal.open_root = root
    return run_journal, created


async def _acquire(
    journal: Journal, run_id: str, owner: str, ttl: float, above: Lease | None
) -> Lease:
    """The run's lease (``above``: a nested run's owner's lease of the top run, refused
    if stale); a top run's asked for as of old, so journals without ``above`` work."""
    for last in (False, True):  # again once a cancel or decision here let go of it
        try:
            if above is None:
                return await journal.acquire(run_id, owner=owner, ttl=ttl)
            return await journal.acquire(run_id, owner=owner, ttl=ttl, above=above)
        except LeaseHeld as refused:
            if last:
                raise
            await wait_brief_hold(run_id, refused)
    raise AssertionError("unreachable")  # (the last attempt returned or raised)


def _same_config(created: RunCreated, team: Team, *, force: bool) -> None:
    """Refuse a team configured otherwise than the run's (``force``: a WARNING on
    ``regiment.resume`` instead), naming the parts that changed."""
    now, parts = config_hashes(team)
    if now == created.config_hash:
        return
    changed = changed_parts(created.config_parts, parts)
    if force:
        _log.warning(
            "run %s is resumed (forced) by a differently configured team %r: %s; it may "
            "not redo the same run",
            created.run_id,
            team.name,
            changed,
        )
        return
    raise ConfigError(
        f"run {created.run_id!r} was started by a differently configured team "
        f"{team.name!r} (config hash {created.config_hash}, now {now}): {changed}, so a "
        "resume might not redo the same run; pass force=True (regiment resume --force) "
        "to continue it anyway"
    )


async def finished(opened: AbstractAsyncContextManager[Opened]) -> RunResult:
    """Wait for a run's end (``opened`` sends no events); its result, or raise its error."""
    async with opened as (channel, events):
        if channel.lender is not None:  # runs the planner's model calls while it waits
            await channel.lender.wait_end(channel)
        else:
            async for _ in events:  # nothing is sent: this waits for the run's end
                pass
    if channel.result is not None:
        return channel.result
    try:
        raise channel.error or RunCancelled("the run ended without a result")
    finally:  # the error's traceback holds this frame: no cycle left for the collector
        del channel, events  # (a lent run's events, RunEnd, hold its channel too)
