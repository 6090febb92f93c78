"""Actors with no task of their own until they need one (``ActorContext.spawn_dormant``).

An actor that takes nearly all of its mail in its senders' tasks (``receive_now``,
``receive_here``) uses its own task only to wait for mail and to stop; a run's
planner actor is one. Yet starting and stopping that task cost ~324k
instructions (``bench/actors_roundtrip.py --instructions``): a task, a task
group, cancel scopes and five loop turns, for every run.

A dormant actor is made and started in the spawner's task (its ``on_start``
must finish without awaiting) and has no task. Its task is started, in its
parent's task group, the first time it needs one: a message it does not take
in the sender's task is queued, it starts a helper task, or it stops itself.
From then on it is an ordinary actor. Stopped while still dormant, it runs
``on_stop`` in the stopper's task (shielded, in its own context variables)
and retires; a parent whose life ends stops the dormant children it has left.
It cannot spawn children (that needs its own task group).
"""

from __future__ import annotations

import contextvars
import functools
from typing import TYPE_CHECKING, Generic, TypeVar, final

from regiment.actors._actor import Actor, ActorContext, inline_takers
from regiment.actors._in_context import in_context
from regiment.actors._incarnation import Incarnation
from regiment.actors._ref import current_actor
from regiment.actors._retire import retire, stop_instance
from regiment.errors import ActorFailed, ConfigError

if TYPE_CHECKING:
    from regiment.actors._cell import Cell

__all__ = ("Sleeper", "start_dormant", "stop_dormant", "wake_dormant")

M = TypeVar("M")
R = TypeVar("R")


@final
class Sleeper(Generic[M, R]):
    """A dormant actor's instance, what it needs to start its task, and its context."""

    __slots__ = ("context", "host", "incarnation", "instance")

    def __init__(
        self,
        instance: Actor[M, R],
        incarnation: Incarnation[M, R],
        context: contextvars.Context,
        host: Incarnation[object, object],
    ) -> None:
        self.instance = instance
        self.incarnation = incarnation
        self.context = context  # the actor's context variables (it is the current actor)
        self.host = host  # the parent's incarnation, in whose task group its task will run


def start_dormant(cell: Cell[M, R], host: Incarnation[object, object]) -> None:
    """Make and start ``cell``'s instance here, leaving the actor without a task.

    Raises:
        ActorFailed: its factory or ``on_start`` raised.
        ConfigError: its ``on_start`` awaited (a dormant actor's must not).
    """
    context = contextvars.copy_context()
    context.run(current_actor.set, cell.ref)
    try:
        instance = cell.factory()
    except Exception as exc:
        raise ActorFailed(f"actor {cell.name!r} failed to start: {exc!r}") from exc
    incarnation = Incarnation(cell, None)
    instance.ctx = ActorContext(incarnation, cell.ref, cell.system)
    if type(instance).on_start is not Actor.on_start:
        _start_now(cell.name, context, instance)
    cell.started = True
    cell.sleeper = Sleeper(instance, incarnation, context, host)
    cell.inline, cell.bare = inline_takers(instance)


def _start_now(name: str, context: contextvars.Context, instance: Actor[M, R]) -> None:
    coro = instance.on_start()
    try:
        context.run(coro.send, None)
    except StopIteration:
        return
    except Exception as exc:
        raise ActorFailed(f"actor {name!r} failed to start: {exc!r}") from exc
    coro.close()
    raise ConfigError(
        f"actor {name!r}: on_start awaited, and a dormant actor has no task to wait in; "
        "finish on_start without awaiting, or spawn it with ctx.spawn()"
    )


def wake_dormant(cell: Cell[M, R]) -> None:
    """Start a dormant actor's task (in its parent's task group); no-op otherwise."""
    sleeper = cell.sleeper
    tg = None if sleeper is None else sleeper.host.tg
    if sleeper is None or tg is None or sleeper.host.ended:
        return  # not dormant, or its parent's task group has closed: its end stops it
    cell.sleeper = None
    run = functools.partial(cell.run, first=(sleeper.instance, sleeper.incarnation))
    sleeper.context.run(tg.start_soon, run, name=f"actor {cell.name}")


async def stop_dormant(cell: Cell[M, R], shielded: bool = False) -> None:
    """Stop an actor that never had a task: ``on_stop`` here, then retire it.

    ``on_stop`` runs in a shielded cancel scope; ``shielded``: the caller's already is
    (a run's end), so a second scope would only cost (~250 opcodes made, entered, left).
    """
    sleeper = cell.sleeper
    if sleeper is None:
        return
    cell.sleeper = None
    cell.accepting = False
    cell.mailbox.close()
    instance = sleeper.instance
    try:
        if type(instance).on_stop is not Actor.on_stop:
            if shielded:
                await in_context(sleeper.context, stop_instance(cell, instance))
            else:
                with cell.system.new_cancel_scope(shield=True):
                    await in_context(sleeper.context, stop_instance(cell, instance))
    finally:
        retire(cell, "cancelled")


async def stop_dormant_children(incarnation: Incarnation[M, R]) -> None:
    """Stop the dormant children a parent's ended life leaves (newest first)."""
    for child in reversed(incarnation.children):
        if child.sleeper is not None:
            await stop_dormant(child)
