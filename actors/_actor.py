"""The actor base class and the context the runtime gives each instance."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Generic, Never, TypeVar, TypeVarTuple, final

from regiment.actors._policy import RestartPolicy
from regiment.errors import ConfigError

if TYPE_CHECKING:
    from regiment.actors._incarnation import Incarnation
    from regiment.actors._messages import ChildFailed, Envelope
    from regiment.actors._ref import ActorRef
    from regiment.actors._system import ActorSystem

__all__ = ("Actor", "ActorContext", "inline_takers")

M = TypeVar("M")
R = TypeVar("R")
CM = TypeVar("CM")
CR = TypeVar("CR")
Ts = TypeVarTuple("Ts")


class Actor(ABC, Generic[M, R]):
    """Base class of actors: one handler over a closed union of message types.

    ``M`` is the union of messages the actor accepts, ``R`` what ``receive``
    returns (the reply to an ask; ``None`` if it never replies). The runtime
    calls ``receive`` for one message at a time, so an actor's own state needs
    no locks. A restart replaces the instance with a fresh one from the factory.

    Attributes:
        ctx: set by the runtime before ``on_start``.
    """

    ctx: ActorContext[M, R]

    async def on_start(self) -> None:
        """Called before the first message (spawn returns only after it completes)."""

    async def on_stop(self) -> None:
        """Called when this instance retires (stop, restart, shutdown), shielded from cancellation.

        It must not raise: an exception here leaves the actor system as ActorFailed.
        """

    @abstractmethod
    async def receive(self, message: M) -> R:
        """Handle one message; the return value answers an ask (ignored for send)."""

    async def on_child_failed(self, failure: ChildFailed) -> None:
        """A child failed beyond its restart policy. By default this actor fails too."""
        raise failure.error

    def receive_now(self, envelope: Envelope[M, R]) -> bool:
        """Handle a sent message at once, in the sender's task, if that is cheap and safe.

        The runtime calls it (when a subclass defines it) for a ``send`` that finds
        the actor idle: waiting for mail, with an empty mailbox, so the message
        would have been the next one handled anyway. It must not await or raise,
        and may only touch this instance's own state: it saves the actor's task a
        wake-up. Return ``False`` to have the message queued and handled by
        ``receive`` as usual. Never called for an ``ask``.
        """
        return False

    def receive_message_now(
        self, message: M, sender: ActorRef[Never, object] | None, headers: Mapping[str, str]
    ) -> bool:
        """``receive_now`` given the message itself, before the runtime makes an envelope.

        The runtime calls it (when a subclass defines it) first, for a ``send``,
        ``send_nowait`` or ``send_here`` that finds the actor idle, under the same
        rules as ``receive_now``; ``True`` and no envelope is made at all (no
        message id, no copy of the headers). ``sender`` is the actor whose task
        sends (None from outside any actor); ``headers`` are the sender's own, not
        copied: read them, or keep them unchanged. Headers the system's propagator
        would inject are not made for it: a message sent with no headers in a
        system that has a propagator is never offered here. ``False``: the
        message is enveloped and goes on as if this hook were not defined
        (``receive_now``, ``receive_here``, the mailbox).
        """
        return False

    def receive_here(self, envelope: Envelope[M, R]) -> Awaitable[None] | None:
        """Handle a message sent with ``send_here`` in the sender's task, awaiting as it needs.

        Like ``receive_now``, the runtime calls it (when a subclass defines it)
        only for a message that finds the actor idle, after ``receive_now``
        declined it. Return the handling, which the sender awaits at once, or
        ``None`` to have the message queued. The handling must run as the
        actor's own (its context variables, not the sender's), one at a time
        with the actor's other handlers, and must not raise into the sender: a
        failing handler fails the actor from a task of its own. Cancelling the
        sender cancels the handling. Never called for an ``ask``.
        """
        return None


@final
class ActorContext(Generic[M, R]):
    """What an actor instance knows about its place in the system.

    Attributes:
        self_ref: this actor's ref.
        system: the actor system it runs in.
        name: this actor's name.
    """

    __slots__ = ("_incarnation", "envelope_or_none", "name", "self_ref", "system")

    def __init__(
        self, incarnation: Incarnation[M, R], self_ref: ActorRef[M, R], system: ActorSystem
    ) -> None:
        self._incarnation = incarnation
        self.self_ref = self_ref
        self.system = system
        self.name = self_ref.name
        self.envelope_or_none: Envelope[M, R] | None = None

    @property
    def failure(self) -> Exception | None:
        """What a task this instance started raised, making it fail (``on_stop`` runs
        because of it, and may tell its callers); ``None`` while it has not failed so."""
        return self._incarnation.failure

    @property
    def envelope(self) -> Envelope[M, R]:
        """The envelope of the message being handled (sender, id, headers)."""
        if self.envelope_or_none is None:
            raise ConfigError(
                f"actor {self.name!r}: ctx.envelope is only available inside receive()"
            )
        return self.envelope_or_none

    def start_soon(
        self,
        fn: Callable[[*Ts], Awaitable[object]],
        *args: *Ts,
        name: str | None = None,
    ) -> None:
        """Start a task owned by this actor instance.

        It is cancelled when the actor stops or restarts; an exception in it is a
        failure of the actor (supervised like a failing handler).
        """
        self._incarnation.start_soon(fn, *args, name=name)

    async def spawn(
        self,
        factory: Callable[[], Actor[CM, CR]],
        *,
        name: str,
        capacity: int = 64,
        restart: RestartPolicy = RestartPolicy(),  # noqa: B008 - frozen, safe to share
    ) -> ActorRef[CM, CR]:
        """Start a child actor supervised by this one; returns after its ``on_start``.

        Children stop when this instance stops or restarts. A child failing beyond
        its policy reaches this actor's ``on_child_failed``.
        """
        return await self._incarnation.spawn(factory, name=name, capacity=capacity, restart=restart)

    def spawn_dormant(
        self,
        factory: Callable[[], Actor[CM, CR]],
        *,
        name: str,
        capacity: int = 64,
        restart: RestartPolicy = RestartPolicy(),  # noqa: B008 - frozen, safe to share
    ) -> ActorRef[CM, CR]:
        """Start a child actor here, in this task, with no task of its own until it needs one.

        For an actor that takes its mail in its senders' tasks (``receive_now``,
        ``receive_here``): its task starts the first time a message has to be
        queued, it starts a helper task or it stops itself; stopped before that,
        its ``on_stop`` runs in the stopper's task. Its ``on_start`` must finish
        without awaiting, and it cannot spawn children. Supervised as ``spawn``'s.

        Raises:
            ActorFailed: its factory or ``on_start`` raised.
            ConfigError: its ``on_start`` awaited, or this actor is itself dormant.
        """
        return self._incarnation.spawn_dormant(
            factory, name=name, capacity=capacity, restart=restart
        )


def inline_takers(instance: Actor[M, R]) -> tuple[Actor[M, R] | None, Actor[M, R] | None]:
    """``instance`` as the taker of sent messages in their senders' tasks while it is idle:
    by ``receive_now`` or ``receive_here`` (with an envelope), and by
    ``receive_message_now`` (before one is made); ``None`` where its class defines neither."""
    kind = type(instance)
    inline = (
        kind.receive_now is not Actor.receive_now or kind.receive_here is not Actor.receive_here
    )
    bare = kind.receive_message_now is not Actor.receive_message_now
    return (instance if inline else None), (instance if bare else None)
