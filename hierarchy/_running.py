"""A started team (``RunningTeam``): its actors, and the runs they serve.

``Team.start()`` spawns the actors (see :mod:`regiment.hierarchy._team`);
``RunningTeam`` opens one run per goal, each on its own planner actor under the team's
supervisor, and resumes journaled runs. Nested teams are spawned here too, into the
parent's actor system."""

from __future__ import annotations

import functools
import itertools
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager, nullcontext
from typing import TYPE_CHECKING, final

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream

from regiment.actors import ActorSystem
from regiment.hierarchy._approvals import ApprovalDesk, StepAt
from regiment.hierarchy._approving import DecidesApprovals
from regiment.hierarchy._messages import StepAllowance
from regiment.hierarchy._ranges import run_concurrency
from regiment.hierarchy._result import RunResult
from regiment.hierarchy._supervisor import (
    RunRef,
    RunSpawner,
    SpawnRun,
    capped,
    close_run,
    spawn_known,
    wind_down,
)
from regiment.hierarchy._team_actors import (
    check_run,
    new_run_id,
)
from regiment.hierarchy.events import Event
from regiment.hierarchy.run._channel import RunChannel, RunEnd
from regiment.hierarchy.run._journaling import LEASE_TTL, RunJournal
from regiment.hierarchy.run._lender import Lender, SupervisorLender
from regiment.hierarchy.run._messages import StartRun
from regiment.hierarchy.run._resume import Opened, finished, open_channel, reopened
from regiment.hierarchy.run._session import SessionMemory
from regiment.hierarchy.run._streamed import Streamed, ready
from regiment.hierarchy.run._trace import PausedRoot, record_run_end, root_trace, run_root
from regiment.telemetry import Telemetry
from regiment.tools import MCPHub

if TYPE_CHECKING:
    from regiment.hierarchy._replay import JournaledEvents
    from regiment.hierarchy._team import Team
    from regiment.journal import Journal, TeamFile

__all__ = ("RunningTeam",)

# How many runs of one started team may be starting at once (from their start
# slot to their planner's first message, plus a loop turn): 2 a turn, as 8 held more
# runs alive than the team steps and doubled the collections (bench/README.md, 7th round).
STARTING_AT_ONCE = 2
_NO_SHIELD = nullcontext()  # a run's end that cannot wait (``_end_run``)


@final
class RunningTeam(DecidesApprovals):
    """A started team; runs goals. Get one from ``Team.start()``."""

    def __init__(
        self,
        team: Team,
        spawner: RunSpawner,
        telemetry: Telemetry,
        channels: dict[str, RunChannel],
        desk: ApprovalDesk,
    ) -> None:
        self.team = team
        self._desk = desk
        self._spawner = spawner
        self._telemetry = telemetry
        self._ids = itertools.count(1)
        self._channels = channels
        self.journal: Journal | None = None  # set by Team.start(journal=...)
        self.lease_ttl = LEASE_TTL
        self.team_file: TeamFile | None = None  # set by Team.start(team_file=...)
        self.sessions = SessionMemory()  # sessions' earlier runs, when there is no journal
        self._starting = anyio.Semaphore(STARTING_AT_ONCE, fast_acquire=True)
        self._wind_down = wind_down(team.workers)  # a cancelled run's wait for its steps

    def __repr__(self) -> str:  # the journal by its kind: its spec may hold a password
        journal = "None" if self.journal is None else type(self.journal).__name__
        return f"<RunningTeam {self.team.name!r}: {len(self._channels)} runs in progress, journal={journal}>"

    @property
    def active_runs(self) -> int:
        """How many runs of this team are in progress (started and not yet returned)."""
        return len(self._channels)

    @classmethod
    async def spawn(
        cls,
        team: Team,
        system: ActorSystem,
        *,
        telemetry: Telemetry | None = None,
        mcp: MCPHub | None = None,
    ) -> RunningTeam:
        """Spawn a team's actors, and those of every team nested in it, in ``system``.

        Args:
            team: the team to start.
            system: the actor system the actors live in (and stop with).
            telemetry: used when ``team.telemetry`` is ``None``; nested teams
                pass their parent's, so a nested run is one trace.
            mcp: starts and owns the workers' MCP servers (``Team.start()`` passes one).

        Raises:
            ConfigError: the team contains itself through its team workers, a
                worker has MCP servers but no hub was given, or MCP tool names clash.
            ToolError: an MCP server could not be started.
        """
        desk = ApprovalDesk()
        from regiment.hierarchy._team_spawn import spawn_team  # it makes RunningTeams

        return await spawn_team(team, system, telemetry, prefix="", outer=(), mcp=mcp, desk=desk)

    async def run(
        self,
        goal: str,
        *,
        allowance: StepAllowance | None = None,
        concurrency: int | None = None,
        session: str | None = None,
        deps: object = None,
    ) -> RunResult:
        """Run one goal to its result.

        Args:
            goal: what the team should do.
            allowance: caps this run's budget: its model calls, tool calls and
                tokens are each the smaller of the team's budget and the
                allowance (a parent team passes the share it reserved).
            concurrency: how many of this run's steps may be in flight at once;
                ``None`` uses the team's ``concurrency``. A worker's
                ``max_concurrent_steps`` is shared by every run of the started
                team, so concurrent runs also wait for each other there.
            session: the session the run belongs to (recorded in the journal).
            deps: handed to every tool that takes a ``RunContext`` (``ctx.deps``);
                not journaled, so pass them again to :meth:`resume`.

        Raises:
            PlanError: no valid plan within the allowed attempts.
            StepFailed: a step failed and no replan could recover it.
            BudgetExceeded: a budget ran out and the budget says ``on_exhausted="raise"``.
            RunError: anything else that ended the run without a result.
        """
        opened = await _let_in(self, goal, allowance, False, concurrency, session, deps)
        return await finished(opened)

    async def resume(self, run_id: str, *, deps: object = None, force: bool = False) -> RunResult:
        """Finish a journaled run that stopped (its process died), without repeating side effects.

        Committed steps are not run again; journaled model responses and tool results
        are replayed; a tool call in flight at the crash runs again with the same
        idempotency key. ``deps``: the run's, again; ``force``: even if the team changed.

        Raises:
            ConfigError: no journal, or the configuration changed (without ``force``).
            LeaseHeld: another process is running it. JournalError: no such run, or
                it has finished. RunError: as for :meth:`run`.
        """
        return await finished(reopened(self, run_id, deps=deps, force=force, streaming=False))

    def resume_stream(
        self,
        run_id: str,
        *,
        deps: object = None,
        force: bool = False,
        journaled: JournaledEvents | None = None,
    ) -> Streamed:
        """:meth:`resume`, yielding the run's events from its start, as :meth:`stream` does.

        ``journaled``: the run's records as just read (``JournaledEvents.read``), which
        the resume then takes instead of reading the journal again.
        """
        known = journaled.entries if journaled and journaled.run_id == run_id else None
        make = functools.partial(
            reopened, self, run_id, deps=deps, force=force, streaming=True, entries=known
        )
        opens = functools.partial(ready, make)
        again = "running.resume_stream(run_id)"
        return Streamed(opens, self._spawner.checkpoint_if_cancelled, again)

    def stream(
        self,
        goal: str,
        *,
        allowance: StepAllowance | None = None,
        concurrency: int | None = None,
        session: str | None = None,
        deps: object = None,
        run_id: str | None = None,
    ) -> Streamed:
        """Run one goal, yielding its events as they happen (``async with``, once).

        The last event is ``RunCompleted`` (with the result) or ``RunFailed``.
        Leaving the block early cancels the run; after the block, the yielded
        ``RunEvents``'s ``ending`` is the run's last event, read or not (for a run
        left early, a ``RunCompleted`` with status ``cancelled`` and what it got to).
        ``allowance``, ``concurrency``, ``session``, ``deps`` are as for :meth:`run`; ``run_id``:
        the run's (else a new one; a journal that has it refuses the run: ``JournalError``).
        """
        args = (self, goal, allowance, True, concurrency, session, deps, run_id)
        opens = functools.partial(_let_in, *args)
        return Streamed(opens, self._spawner.checkpoint_if_cancelled, "running.stream(goal)")

    @asynccontextmanager
    async def _open(
        self,
        goal: str,
        allowance: StepAllowance | None,
        *,
        streaming: bool,
        concurrency: int | None = None,
        session: str | None = None,
        deps: object = None,
        resumed: RunJournal | None = None,
        parent: StepAt | None = None,
        held: bool = False,  # run() checked its arguments and took a start slot
        link: Callable[[RunChannel], None] | None = None,  # a nested run's, to the run above
        named: str | None = None,  # its id, given (stream(run_id=...))
    ) -> AsyncIterator[Opened]:
        starting = held
        try:
            if not held:  # a burst of runs waits here (as in run()) before it holds anything
                check_run(self.team, goal, session, concurrency, deps)
                await self._starting.acquire()
                starting = True
            limit = run_concurrency(concurrency, self.team.concurrency)  # checked: no raise
            run_id = resumed.run_id if resumed else named or new_run_id(self._ids)
            budget, tel = capped(self.team.budget, allowance), self._telemetry
            root = run_root(tel, self.team, (run_id, goal, session), resumed)
            with PausedRoot(root) as (span, hold):  # a nested run's may end paused
                # JournalError: the run is refused, nothing started. The journal keeps the
                # root span's trace context, so a resume continues the run's trace.
                trace = root_trace(span) if tel.tracing else (None, None)
                # run() and resume() wait for the end and lend their task meanwhile
                lender = None if streaming or parent else Lender(self._spawner.new_wakeup())
                channel, events = await open_channel(
                    self, (run_id, goal, session), deps, resumed, streaming, trace, lender
                )
                if lender is None:  # its caller reads events: the supervisor runs its calls
                    channel.supervisor = SupervisorLender(self._spawner.start_helper, run_id)
                if link is not None:  # before StartRun: its planner's first call may draw
                    link(channel)
                self._channels[run_id] = hold.channel = channel
                ref: RunRef | None = None
                try:
                    spawn = SpawnRun(run_id, goal, channel, span, budget, limit)
                    ref = self._spawn_run(spawn, parent)
                    if channel.journal is not None:  # (its record was written, shielded)
                        await self._spawner.checkpoint_if_cancelled()
                    ref.send_nowait(StartRun())  # a fresh mailbox: room, nothing to wait for
                    # A loop turn before the next caller may start a run (a burst starts a few
                    # a turn); not for a step's child run: a cancel here lost its spend.
                    if parent is None:
                        await self._spawner.checkpoint()
                    starting = False
                    self._starting.release()
                    yield channel, events
                finally:
                    await self._end_run(run_id, ref, channel, events, session)
                    record_run_end(tel, span, channel)
        finally:
            if starting:
                self._starting.release()

    def _spawn_run(self, spawn: SpawnRun, parent: StepAt | None) -> RunRef:
        """The run's planner actor, spawned (in this task, dormant) and known to the
        approvals desk; nothing here waits, so no cancel can land in between."""
        return spawn_known(self._spawner, self._desk, spawn, parent)

    async def _end_run(
        self,
        run_id: str,
        ref: RunRef | None,
        channel: RunChannel,
        events: MemoryObjectReceiveStream[Event] | RunEnd,
        session: str | None,
    ) -> None:
        """Cancel the run if it still goes, stop its actor, close its events and journal;
        without a journal, remember it for its session. (Its on_stop only lets go.)"""
        try:
            # A done run, its planner dormant: nothing below waits, so no shield (a scope)
            quiet = ref is not None and channel.done and ref.dormant and channel.journal is None
            with _NO_SHIELD if quiet else self._spawner.new_cancel_scope(shield=True):
                if ref is not None:
                    await close_run(ref, channel, events, self._wind_down)
                else:  # refused before its planner started: nothing else closes this end
                    channel.send.close()
                events.close()
                if channel.journal is not None:
                    await channel.journal.close()  # JournalError: the run is not durable
        finally:
            del self._channels[run_id]
            result = channel.result
            self._desk.close_run(run_id, paused=result is not None and result.status == "paused")
            channel.in_flight = channel.cut = None  # (a nested run: no cycle left for the GC)
            if session is not None and self.journal is None and channel.result is not None:
                self.sessions.remember(session, channel.result, self.team)


async def _let_in(
    running: RunningTeam,
    goal: str,
    allowance: StepAllowance | None,
    stream: bool,
    limit: int | None,
    session: str | None,
    deps: object,
    named: str | None = None,
) -> AbstractAsyncContextManager[Opened]:
    """A run's arguments checked, a start slot taken, and only then its context manager
    made: each garbage collection walks what a burst's waiting callers hold."""
    check_run(running.team, goal, session, limit, deps, named, running._channels)
    await running._starting.acquire()
    return running._open(
        goal, allowance, streaming=stream, concurrency=limit, session=session, deps=deps,
        held=True, named=named,
    )  # fmt: skip
