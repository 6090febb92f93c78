"""The team's supervisor: the parent of every run's planner actor, and how a
run's actor is spawned (in the caller's task) and closed."""

from __future__ import annotations

import contextlib
import dataclasses
import functools
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Never, assert_never, final

import anyio
import msgspec
from anyio.streams.memory import MemoryObjectReceiveStream
from opentelemetry.trace import Span

from regiment.actors import Actor, ActorContext, ActorRef, ChildFailed, RestartPolicy, Wakeup
from regiment.errors import ActorFailed, ActorStopped, MailboxFull, RunError
from regiment.hierarchy._approvals import ApprovalDesk, StepAt
from regiment.hierarchy._budget import Budget
from regiment.hierarchy._messages import PAUSING, StepAllowance
from regiment.hierarchy.events import Event, RunFailed
from regiment.hierarchy.run._actor import PlannerActor
from regiment.hierarchy.run._changes import RunAborted
from regiment.hierarchy.run._channel import RunChannel, RunEnd, not_executing
from regiment.hierarchy.run._messages import CancelRun, PlannerMessage
from regiment.hierarchy.run._runtime import TeamRuntime
from regiment.hierarchy.run._turns import planner_crashed
from regiment.hierarchy.workers._worker import Worker

__all__ = (
    "RunRef",
    "RunSpawner",
    "SpawnRun",
    "Supervisor",
    "capped",
    "close_run",
    "spawn_known",
    "wind_down",
)

# How long a cancelled run may take to collect the cancelled report of a step that
# may never be given up (its worker's cancel_grace is None).
_CANCEL_GRACE = 5.0
# Beyond a worker's cancel grace: for the report of a step given up to reach its run.
_HAND_IN = 1.0
# A run's planner is never restarted: its failure fails the run. One value for every
# run (it is frozen), not one made per spawn.
_NO_RESTART = RestartPolicy(max_restarts=0)


class SpawnRun(msgspec.Struct, frozen=True):
    run_id: str
    goal: str
    channel: RunChannel
    run_span: Span
    budget: Budget
    concurrency: int


RunRef = ActorRef[PlannerMessage, None]


@final
class RunSpawner:
    """Spawns a run's planner actor as the supervisor's child, in the caller's task.

    The supervisor lends its context here while an instance of it lives. Asking the
    supervisor to spawn cost two hops a run (its task woke to spawn, the asker woke
    for the reply) for work that needs nothing of the supervisor's own turn: the
    child joins the supervisor's task group and escalates to it all the same.
    """

    __slots__ = (
        "_ctx",
        "checkpoint",
        "checkpoint_if_cancelled",
        "name",
        "new_cancel_scope",
        "new_wakeup",
        "runtime",
    )

    def __init__(
        self,
        runtime: TeamRuntime,
        name: str,
        new_wakeup: Callable[[], Wakeup],
        checkpoint: Callable[[], Awaitable[None]],
        checkpoint_if_cancelled: Callable[[], Awaitable[None]],
        new_cancel_scope: type[anyio.CancelScope],
    ) -> None:
        self.runtime = runtime
        self.name = name  # the supervisor's, for errors
        self.new_wakeup = new_wakeup  # the actor system's (a run's caller waits on one)
        self.checkpoint = checkpoint  # the actor system's (paces a burst of run starts)
        self.checkpoint_if_cancelled = checkpoint_if_cancelled  # the system's (stream readers)
        self.new_cancel_scope = new_cancel_scope  # the system's (a run's end is shielded)
        self._ctx: ActorContext[Never, None] | None = None  # while a supervisor instance lives

    def start_helper(self, fn: Callable[[], Awaitable[None]], name: str) -> None:
        """Start ``fn`` in a task of the supervisor's (``RuntimeError``: it has stopped)."""
        ctx = self._ctx
        if ctx is None:
            raise RuntimeError(f"actor {self.name!r} has stopped")
        ctx.start_soon(fn, name=name)

    def lend(self, ctx: ActorContext[Never, None] | None) -> None:
        """The supervisor's context from its start to its stop; ``None`` after."""
        self._ctx = ctx

    def spawn(self, message: SpawnRun) -> RunRef:
        """The run's planner actor, spawned and started.

        Raises:
            ActorStopped: the team's supervisor has stopped (the team is stopping).
            RunError: a hook of the planner's ``Prompts`` raised as the run began.
        """
        ctx = self._ctx
        if ctx is None or not ctx.self_ref.is_alive:  # not once the supervisor is stopping
            raise _stopped(self.name)
        runtime, run_id, goal = self.runtime, message.run_id, message.goal
        channel, span = message.channel, message.run_span
        if message.budget != runtime.budget or message.concurrency != runtime.concurrency:
            # capped by a parent's step allowance, or the caller's concurrency
            runtime = dataclasses.replace(
                runtime, budget=message.budget, concurrency=message.concurrency
            )
        # Dormant: the planner takes its mail in its senders' tasks (its start in
        # this one, its reports in the runners', its calls in run()'s caller's),
        # so its own task, and starting and stopping it, are spared unless needed.
        try:
            return ctx.spawn_dormant(
                lambda: PlannerActor(runtime, run_id, goal, channel, span),
                name=run_id,
                capacity=1024,
                restart=_NO_RESTART,
            )
        except ActorFailed as exc:  # a Prompts hook raised: the run fails saying which
            error = exc.__cause__
            if not isinstance(error, RunError):
                raise
            if channel.journal is not None:  # journaled as failed, not left to list as stalled
                channel.journal.note(RunAborted(error), None)
            raise error from error.__cause__


def spawn_known(
    spawner: RunSpawner, desk: ApprovalDesk, spawn: SpawnRun, parent: StepAt | None
) -> RunRef:
    """Spawn the run's planner and make the run known to the team's approvals desk (a
    nested run as ``parent``'s, its steps in flight told by its planner when asked;
    its steps cut at once with the step it serves, ``channel.cut``)."""
    run_id, channel = spawn.run_id, spawn.channel
    if parent is not None:
        channel.in_flight = not_executing  # until its planner starts
    ref = spawner.spawn(spawn)
    if parent is None:
        desk.open_run(run_id, ref.send)
    else:
        desk.link(
            run_id, parent, lambda: None if channel.in_flight is None else channel.in_flight()
        )
        channel.cut = functools.partial(cut_nested, ref, channel)
    channel.desk, desk.clocks[run_id] = desk, channel.clock  # approval waits hold its clock
    return ref


def _stopped(name: str) -> ActorStopped:
    return ActorStopped(
        f"actor {name!r} has stopped: the team is stopping or has stopped (its "
        "`async with team.start()` block was left), so no run can start; run goals inside "
        "that block, or start the team again"
    )


class Supervisor(Actor[Never, None]):
    """The parent of every run's planner actor, so a crashed run fails alone and
    its caller is told why. It takes no messages: callers spawn runs through the
    ``RunSpawner`` it lends its context to."""

    def __init__(self, spawner: RunSpawner, channels: Mapping[str, RunChannel]) -> None:
        self._spawner = spawner
        # The live runs' channels; ``RunningTeam._open`` adds and removes them, so
        # the table is the size of the runs in progress wherever a caller cancels.
        self._channels = channels

    async def on_start(self) -> None:
        self._spawner.lend(self.ctx)

    async def on_stop(self) -> None:
        self._spawner.lend(None)

    async def receive(self, message: Never) -> None:
        assert_never(message)

    async def on_child_failed(self, failure: ChildFailed) -> None:
        channel = self._channels.get(failure.child.name)
        if channel is None:
            return
        if not channel.done:  # its on_stop failed too (it closes the channel otherwise)
            error = planner_crashed(failure.error)
            channel.error = error
            channel.close(
                RunFailed(run_id=failure.child.name, error_type="RunError", message=str(error))
            )
        channel.deliver_last()  # the planner is gone: nothing will flush its end first


def capped(budget: Budget, allowance: StepAllowance | None) -> Budget:
    """The budget with model calls, tool calls, tokens (all, input, output) and money
    capped by ``allowance``."""
    if allowance is None:
        return budget
    return msgspec.structs.replace(
        budget,
        model_calls=_min(budget.model_calls, allowance.model_calls),
        tool_calls=_min(budget.tool_calls, allowance.tool_calls),
        tokens=_min(budget.tokens, allowance.tokens),
        input_tokens=_min(budget.input_tokens, allowance.input_tokens),
        output_tokens=_min(budget.output_tokens, allowance.output_tokens),
        usd=_min_usd(budget.usd, allowance.micro_usd),
    )


def _min_usd(usd: float | None, micro: int | None) -> float | None:
    """A nested run's money limit: its team's, capped by its step's share (micro-dollars)."""
    if micro is None:
        return usd
    return micro / 1_000_000 if usd is None else min(usd, micro / 1_000_000)


def _min(a: int | None, b: int | None) -> int | None:
    if a is None:
        return b
    return a if b is None else min(a, b)


def wind_down(workers: Iterable[object]) -> float:
    """How long a cancelled run of a team with ``workers`` waits for its steps' reports:
    a step that does not stop is reported when its worker's ``cancel_grace`` runs out
    (a nested team's step after the default grace; no grace: the old 5 s wait)."""
    graces = [w.cancel_grace if isinstance(w, Worker) else None for w in workers]
    return max(_CANCEL_GRACE if g is None else g for g in graces) + _HAND_IN


def cut_nested(ref: ActorRef[PlannerMessage, None], channel: RunChannel, pausing: bool) -> None:
    """The step a nested run serves was cut: cut the run's steps now, in this task
    (its planner, when idle, takes the ``CancelRun`` at once, see ``_handle_now``),
    so none of them starts a tool meanwhile; ``close_run`` winds it down after."""
    channel.pausing = pausing
    # Its steps start no tool from now on, even while its planner is busy and has yet to
    # take the CancelRun (then its workers wait for their cuts in their turn).
    channel.fence.cut(None, PAUSING if pausing else "the step this run serves was cut")
    with contextlib.suppress(MailboxFull, ActorStopped):  # close_run sends it then
        ref.send_nowait(CancelRun(PAUSING) if pausing else CancelRun())


async def close_run(
    ref: ActorRef[PlannerMessage, None],
    channel: RunChannel,
    events: MemoryObjectReceiveStream[Event] | RunEnd,
    grace: float = _CANCEL_GRACE,
) -> None:
    """Cancel the run if it is still going, wait (``grace`` seconds at most) for it to
    wind down, stop its actor. Call it inside a shielded cancel scope (``_end_run``), or
    (nothing then waits) for a done run whose planner is still dormant."""
    if ref.is_alive and not channel.done:
        # No step of the run starts a tool from now on, whether or not its planner is
        # free to take the CancelRun at once (it may be busy with a report, say).
        channel.fence.cut(None, PAUSING if channel.pausing else "the run was cancelled")
        with anyio.move_on_after(grace), contextlib.suppress(ActorStopped):
            # waits if the mailbox is full of reports
            await ref.send(CancelRun(PAUSING) if channel.pausing else CancelRun())
            async for _ in events:
                pass
    if ref.is_alive:
        await ref.stop(shielded=True)  # inside RunningTeam._end_run's shield (or no wait)
