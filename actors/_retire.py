"""An actor's end: its ``on_stop`` run, its mailbox emptied into dead letters, its
cell let go of (the task's end and a dormant actor's stop share these)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Never, TypeVar

import anyio

from regiment.actors._messages import DeadLetterReason, Envelope
from regiment.errors import ActorFailed, ActorStopped

if TYPE_CHECKING:
    from regiment.actors._actor import Actor
    from regiment.actors._cell import Cell

__all__ = ("retire", "stop_instance", "stopped_error")

M = TypeVar("M")
R = TypeVar("R")


async def stop_instance(cell: Cell[M, R], instance: Actor[M, R]) -> None:
    """Run ``on_stop``; one that raises fails the system (on_stop must not raise)."""
    try:
        await instance.on_stop()
    except Exception as exc:
        error = ActorFailed(f"actor {cell.name!r} raised in on_stop (on_stop must not raise)")
        error.__cause__ = exc
        cell.system.fail(error)


def retire(cell: Cell[M, R], reason: DeadLetterReason) -> None:
    """Refuse new mail, turn what is queued into dead letters, signal stopped."""
    cell.accepting = False
    cell.inline = cell.bare = None
    cell.mailbox.close()
    while True:
        try:
            envelope = cell.mailbox.get_nowait()
        except (anyio.WouldBlock, anyio.EndOfStream):
            break
        cell.system.dead_letter(cell.name, envelope, reason)
        if envelope.reply_to is not None:
            envelope.reply_to.fail(stopped_error(cell.name, envelope))
    # What the factory and the parent link hold (for a run: its whole state) is
    # let go now, and so is the ref: it points at the cell, so a cell keeping its
    # ref would be a cycle left to the cyclic collector, whose passes over many
    # finished actors stall the loop. A ref kept outside still works (it only
    # needs the cell); nothing reads ``cell.ref`` once the actor has retired.
    cell.factory = _retired
    cell.parent = None
    del cell.ref
    cell.stopped.set()


def stopped_error(name: str, envelope: Envelope[M, R]) -> ActorStopped:
    return ActorStopped(
        f"actor {name!r} stopped before answering {type(envelope.message).__name__}"
    )


def _retired() -> Never:
    raise ActorStopped("a retired actor cannot make a new instance")
