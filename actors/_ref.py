"""Typed handles to actors: send, ask, stop."""

from __future__ import annotations

from collections.abc import Awaitable, Mapping
from contextvars import ContextVar
from types import MappingProxyType
from typing import TYPE_CHECKING, Generic, Never, TypeVar, final

from regiment.actors._reply import ReplySlot

if TYPE_CHECKING:
    from regiment.actors._cell import Cell

# What receive_message_now is given for a message sent with no headers (none to copy).
NO_HEADERS: Mapping[str, str] = MappingProxyType({})

__all__ = ("NO_HEADERS", "ActorRef")

M_contra = TypeVar("M_contra", contravariant=True)
R_co = TypeVar("R_co", covariant=True)
M = TypeVar("M")
R = TypeVar("R")

# The actor whose task is running (inherited by tasks it starts): the sender of
# what those tasks send, and how stop() notices an actor stopping itself.
current_actor: ContextVar[ActorRef[Never, object] | None] = ContextVar(
    "regiment_current_actor", default=None
)


@final
class ActorRef(Generic[M_contra, R_co]):
    """A handle to one actor, typed by the messages it accepts and its ask reply.

    Refs are cheap to pass around (also inside messages); each actor has exactly
    one, so ``is`` and ``==`` compare actors.
    """

    __slots__ = ("_cell", "name")

    def __init__(self, cell: Cell[M_contra, R_co], name: str) -> None:
        self._cell = cell
        self.name = name

    def __repr__(self) -> str:
        state = "alive" if self.is_alive else "stopped"
        return f"<ActorRef {self.name!r} {state}>"

    @property
    def is_alive(self) -> bool:
        """True while the actor accepts messages (False once stopping or stopped)."""
        return self._cell.accepting

    @property
    def dormant(self) -> bool:
        """True while the actor has no task of its own (spawned dormant, its turns taken
        in its senders' tasks): ``stop()`` then runs ``on_stop`` in the caller's task."""
        return self._cell.sleeper is not None

    @property
    def mailbox_size(self) -> int:
        """How many messages are queued in the mailbox right now."""
        return len(self._cell.mailbox)

    @property
    def capacity(self) -> int:
        """The most messages the mailbox holds."""
        return self._cell.capacity

    async def send(self, message: M_contra, *, headers: Mapping[str, str] | None = None) -> None:
        """Put ``message`` in the mailbox, waiting while it is full (backpressure).

        Args:
            message: one of the actor's message types.
            headers: context to carry; by default the system's propagator injects it.

        Raises:
            ActorStopped: the actor has stopped; the message became a dead letter.
        """
        cell = self._cell
        await cell.system.checkpoint_if_cancelled()
        if cell.bare is None or not _offered(cell, message, headers):
            await cell.deliver(cell.system.envelope(message, headers, None))

    def send_nowait(self, message: M_contra, *, headers: Mapping[str, str] | None = None) -> None:
        """Put ``message`` in the mailbox without waiting.

        Raises:
            MailboxFull: the mailbox is at capacity (nothing was queued).
            ActorStopped: the actor has stopped; the message became a dead letter.
        """
        cell = self._cell
        bare = cell.bare  # _offered spelled out: a plan step is sent so (#22)
        if (
            bare is not None
            and (cell.mailbox.waiting or (cell.sleeper is not None and not cell.system.closing))
            and (headers is not None or cell.system.propagator is None)
            and bare.receive_message_now(message, current_actor.get(), headers or NO_HEADERS)
        ):
            return
        cell.deliver_nowait(cell.system.envelope(message, headers, None))

    def send_here(
        self, message: M_contra, *, headers: Mapping[str, str] | None = None
    ) -> Awaitable[None] | None:
        """``send_nowait``, except that an idle actor that defines ``receive_here``
        may handle ``message`` in the caller's task: then the handling is
        returned, and must be awaited at once (the actor is busy until it ends).

        Raises:
            MailboxFull: the mailbox is at capacity (nothing was queued).
            ActorStopped: the actor has stopped; the message became a dead letter.
        """
        cell = self._cell
        bare = cell.bare  # _offered spelled out: a step's report is handed in so (#22)
        if (
            bare is not None
            and (cell.mailbox.waiting or (cell.sleeper is not None and not cell.system.closing))
            and (headers is not None or cell.system.propagator is None)
            and bare.receive_message_now(message, current_actor.get(), headers or NO_HEADERS)
        ):
            return None
        return cell.deliver_here(cell.system.envelope(message, headers, None))

    async def ask(self, message: M_contra, *, timeout: float | None = None) -> R_co:  # noqa: ASYNC109
        """Send ``message`` and wait for the handler's return value.

        A reply arriving after the asker gave up is dropped quietly.

        Raises:
            AskTimeout: no reply within ``timeout`` seconds (names actor and message type).
            ActorStopped: the actor stopped before answering.
            Exception: whatever the handler raised (the actor is supervised as usual).
        """
        cell = self._cell
        slot: ReplySlot[R_co] = ReplySlot(cell.system.new_wakeup())
        # No checkpoint before delivering: waiting for the reply is the checkpoint.
        await cell.deliver(cell.system.envelope(message, None, slot))
        return await slot.wait(self.name, message, timeout)

    async def stop(self, *, shielded: bool = False) -> None:
        """Stop gracefully: refuse new messages, handle the queued ones, run ``on_stop``.

        Returns once the actor has stopped. Called by the actor on itself, it
        only closes the mailbox and returns; the actor stops after the current
        handler and the queued messages. A dormant actor (spawned with no task yet)
        runs ``on_stop`` in the caller's task, shielded from cancellation;
        ``shielded=True`` says the caller already stops it inside a shielded cancel
        scope, so no second scope is made for it.
        """
        cell = self._cell
        if current_actor.get() is self:
            cell.close_mailbox()
            cell.wake_task()  # a dormant actor ends in its task, after this handler
        elif cell.sleeper is not None:
            await cell.stop_without_task(shielded)  # dormant: on_stop runs here
        else:
            cell.close_mailbox()
            await cell.stopped.wait()


def _offered(cell: Cell[M, R], message: M, headers: Mapping[str, str] | None) -> bool:
    """Whether the idle actor's ``receive_message_now`` took ``message`` (no envelope
    made); ``send_nowait`` and ``send_here`` spell it out (a frame fewer, #22)."""
    bare = cell.bare
    return (
        bare is not None
        and (cell.mailbox.waiting or (cell.sleeper is not None and not cell.system.closing))
        and (headers is not None or cell.system.propagator is None)
        and bare.receive_message_now(message, current_actor.get(), headers or NO_HEADERS)
    )
