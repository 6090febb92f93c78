"""One instance's life in its cell: made (or woken), started, its mail handled one
envelope at a time, its children's escalations taken, stopped (``Cell.run`` drives it)."""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeVar

import anyio
import anyio.lowlevel
from anyio.abc import TaskStatus

from regiment.actors._actor import Actor, ActorContext
from regiment.actors._dormant import stop_dormant_children
from regiment.actors._incarnation import Incarnation
from regiment.actors._messages import Envelope
from regiment.actors._policy import RestartWindow
from regiment.actors._ref import ActorRef
from regiment.actors._retire import stop_instance, stopped_error
from regiment.errors import ActorFailed

if TYPE_CHECKING:
    from regiment.actors._cell import Cell

__all__ = ("gave_up", "handle", "handle_signals", "incarnate")

M = TypeVar("M")
R = TypeVar("R")


async def incarnate(
    cell: Cell[M, R],
    status: TaskStatus[ActorRef[M, R]] | None,
    first: tuple[Actor[M, R], Incarnation[M, R]] | None,
) -> Exception | None:
    """One instance's life: made (or a dormant actor's, woken), started, living in
    its task group until its mailbox ends or it fails, stopped; its failure, if any."""
    if first is None:
        try:
            instance = cell.factory()
        except Exception as exc:
            return exc
    else:
        instance = first[0]
    failure: Exception | None = None
    started = first is not None
    incarnation = Incarnation(cell, None) if first is None else first[1]
    try:
        async with cell.system.new_task_group() as tg:
            incarnation.bind(tg)  # the helper tasks a dormant actor asked for start
            try:
                if first is None:
                    instance.ctx = ActorContext(incarnation, cell.ref, cell.system)
                    if type(instance).on_start is not Actor.on_start:  # the default does nothing
                        try:
                            await instance.on_start()
                        except Exception as exc:
                            failure = exc
                    started = failure is None
                    if started and status is not None:
                        cell.started = True
                        status.started(cell.ref)
                else:
                    # Woken under a cancelled parent (the team stopping): end as a
                    # task that had waited all along would, before taking any mail.
                    await anyio.lowlevel.checkpoint_if_cancelled()
                if failure is None:
                    failure = await cell._live(instance, incarnation)
            finally:
                # The body is done and the group only waits for its tasks now:
                # a dormant child's task must not start in it (trio refuses).
                incarnation.ended = True
            if failure is not None or not incarnation.idle:
                # Skipped when there is nothing to cancel: anyio's cancel() is
                # not cheap (it formats the current task's repr).
                tg.cancel_scope.cancel()
    finally:
        if incarnation.children and incarnation.has_dormant_children():
            with cell.system.new_cancel_scope(shield=True):
                await stop_dormant_children(incarnation)
        # The default on_stop does nothing: no shielded scope to enter for it.
        if started and type(instance).on_stop is not Actor.on_stop:
            with cell.system.new_cancel_scope(shield=True):
                await stop_instance(cell, instance)
    return failure or incarnation.failure


async def handle(
    cell: Cell[M, R], instance: Actor[M, R], ctx: ActorContext[M, R], envelope: Envelope[M, R]
) -> Exception | None:
    """One message through ``receive``; the handler's failure, if it failed."""
    ctx.envelope_or_none = envelope
    slot = envelope.reply_to
    propagator = cell.system.propagator
    try:
        if propagator is None:
            result = await instance.receive(envelope.message)
        else:
            with propagator.activate(envelope.headers):
                result = await instance.receive(envelope.message)
    except Exception as exc:
        if slot is not None:
            slot.fail(exc)
        return exc
    except BaseException:
        # cancelled mid-handler: the asker must not wait forever
        if slot is not None:
            slot.fail(stopped_error(cell.name, envelope))
        raise
    finally:
        ctx.envelope_or_none = None
    if slot is not None:
        slot.resolve(result)
    return None


async def handle_signals(instance: Actor[M, R], incarnation: Incarnation[M, R]) -> Exception | None:
    """Let the instance react to its children's escalations; its own failure, if it fails."""
    while incarnation.signals:
        try:
            await instance.on_child_failed(incarnation.signals.popleft())
        except Exception as exc:
            return exc
    return None


def gave_up(name: str, window: RestartWindow, accepting: bool, failure: Exception) -> ActorFailed:
    """The system's error for a top-level actor that failed beyond its restart policy."""
    policy = window.policy
    if accepting:
        why = (
            f"failed {window.failures_in_window} times within {policy.within:g} s"
            f" (its restart policy allows {policy.max_restarts} restarts)"
        )
    else:
        why = "failed while stopping"
    error = ActorFailed(f"actor {name!r} {why}; last error: {failure!r}")
    error.__cause__ = failure
    return error
