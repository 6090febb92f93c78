"""The actor system: owns every actor's task, the dead letters and the clock."""

from __future__ import annotations

import itertools
import os
from collections import deque
from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from types import TracebackType
from typing import TYPE_CHECKING, TypeVar, cast, final

import anyio
from anyio.abc import TaskGroup

from regiment._misuse import EnterFirst
from regiment.actors._cell import Cell
from regiment.actors._messages import DeadLetter, DeadLetterReason, Envelope
from regiment.actors._policy import RestartPolicy
from regiment.actors._propagation import ContextPropagator
from regiment.actors._ref import ActorRef, current_actor
from regiment.actors._wakeup import (
    Wakeup,
    loop_checkpoint,
    loop_checkpoint_if_cancelled,
    loop_clock,
    wakeup_factory,
)
from regiment.errors import ActorFailed, ConfigError

if TYPE_CHECKING:
    from regiment.actors._actor import Actor
    from regiment.actors._reply import ReplySlot

__all__ = ("ActorSystem", "open_actor_system")

M = TypeVar("M")
R = TypeVar("R")


@final
class ActorSystem:
    """Where actors live; made by :func:`open_actor_system`, valid inside its block.

    Attributes:
        propagator: carries trace context from senders to handlers, if given.
        clock: seconds, used for restart windows.
        loop_time: the event loop's clock, as ``anyio.current_time()`` reads it.
        new_wakeup: makes a :class:`~regiment.actors.Wakeup` for the running backend.
        checkpoint: ``anyio.lowlevel.checkpoint`` for the running backend.
        checkpoint_if_cancelled: ``anyio.lowlevel.checkpoint_if_cancelled`` for it.
        new_task_group: ``anyio.create_task_group`` for the running backend.
        new_cancel_scope: ``anyio.CancelScope`` for the running backend.
    """

    def __init__(
        self,
        tg: TaskGroup,
        *,
        propagator: ContextPropagator | None,
        dead_letter_limit: int,
        on_dead_letter: Callable[[DeadLetter], None] | None,
        clock: Callable[[], float],
    ) -> None:
        self._tg = tg
        self.propagator = propagator
        self.clock = clock
        self._dead_letters: deque[DeadLetter] = deque(maxlen=dead_letter_limit)
        self._dead_letter_count = 0
        self._on_dead_letter = on_dead_letter
        self._ids = itertools.count(1)
        self._id_prefix = os.urandom(4).hex()  # secrets.token_hex without importing hmac
        self.failure: ActorFailed | None = None
        # What the runtime waits on (mailboxes, asks, idle runners): a Wakeup for the
        # running backend, reused across waits, so no event object is made per wait.
        self.new_wakeup: Callable[[], Wakeup] = wakeup_factory()
        # The event loop's clock (anyio.current_time() without the backend lookup);
        # ``clock`` may be a test's fake, this one is what deadlines and sleeps use.
        self.loop_time: Callable[[], float] = loop_clock()
        self.checkpoint: Callable[[], Awaitable[None]] = loop_checkpoint()  # anyio's, found once
        self.checkpoint_if_cancelled = loop_checkpoint_if_cancelled()  # the same
        # The running backend's task group and cancel scope classes, found once:
        # anyio.create_task_group() and anyio.CancelScope() look the backend up on
        # every call, and every actor makes one of each when it starts and stops.
        self.new_task_group: Callable[[], TaskGroup] = type(anyio.create_task_group())
        self.new_cancel_scope: type[anyio.CancelScope] = type(anyio.CancelScope())
        self.closing = False

    @property
    def dead_letters(self) -> Sequence[DeadLetter]:
        """The most recent dead letters, oldest first (at most ``dead_letter_limit``)."""
        return tuple(self._dead_letters)

    @property
    def dead_letter_count(self) -> int:
        """How many dead letters there have been, including those no longer kept."""
        return self._dead_letter_count

    async def spawn(
        self,
        factory: Callable[[], Actor[M, R]],
        *,
        name: str,
        capacity: int = 64,
        restart: RestartPolicy = RestartPolicy(),  # noqa: B008 - frozen, safe to share
    ) -> ActorRef[M, R]:
        """Start a top-level actor; returns once its ``on_start`` has completed.

        Args:
            factory: makes a fresh instance (called again on every restart).
            name: the actor's name, used in errors and dead letters.
            capacity: mailbox size; ``send`` waits and ``send_nowait`` raises beyond it.
            restart: how many failures are restarted before escalating.

        Raises:
            ActorFailed: the first instance could not be made or its ``on_start`` raised.
            ConfigError: the system is already closed, or the capacity is not positive.
        """
        if self.closing:
            raise ConfigError(f"cannot spawn {name!r}: the actor system is closed")
        cell = Cell(self, factory, name, capacity, restart, parent=None)
        return cast("ActorRef[M, R]", await self._tg.start(cell.run, name=f"actor {name}"))

    # -- used by the runtime ----------------------------------------------

    def envelope(
        self, message: M, headers: Mapping[str, str] | None, reply_to: ReplySlot[R] | None
    ) -> Envelope[M, R]:
        if headers is not None:
            carried = dict(headers)
        elif self.propagator is not None:
            carried = self.propagator.inject()
        else:
            carried = {}
        return Envelope(
            message=message,
            sender=current_actor.get(),
            reply_to=reply_to,
            headers=carried,
            _id_prefix=self._id_prefix,
            _id_number=next(self._ids),
        )

    def dead_letter(
        self, recipient: str, envelope: Envelope[M, R], reason: DeadLetterReason
    ) -> None:
        letter = DeadLetter(
            recipient=recipient,
            message=envelope.message,
            reason=reason,
            message_id=envelope.message_id,
        )
        self._dead_letter_count += 1
        self._dead_letters.append(letter)
        if self._on_dead_letter is not None:
            self._on_dead_letter(letter)

    def fail(self, error: ActorFailed) -> None:
        """An escalation reached the top: close the system and raise it (first one wins)."""
        if self.failure is None:
            self.failure = error
        self._tg.cancel_scope.cancel()


class _SystemScope(EnterFirst, AbstractAsyncContextManager[ActorSystem]):
    """Owns the system's task group (``async with open_actor_system() as system:``)."""

    entered_as = ("open_actor_system()", "system")
    after = "; every actor runs inside the block"

    def __init__(
        self,
        *,
        propagator: ContextPropagator | None,
        dead_letter_limit: int,
        on_dead_letter: Callable[[DeadLetter], None] | None,
        clock: Callable[[], float] | None,
    ) -> None:
        if dead_letter_limit < 0:
            raise ConfigError(f"dead_letter_limit must be >= 0, got {dead_letter_limit}")
        self._options = (propagator, dead_letter_limit, on_dead_letter, clock)
        self._tg: TaskGroup | None = None
        self._system: ActorSystem | None = None

    async def __aenter__(self) -> ActorSystem:
        if self._tg is not None:
            raise ConfigError("an open_actor_system() context can be entered only once")
        propagator, limit, on_dead_letter, clock = self._options
        self._tg = anyio.create_task_group()
        await self._tg.__aenter__()
        self._system = ActorSystem(
            self._tg,
            propagator=propagator,
            dead_letter_limit=limit,
            on_dead_letter=on_dead_letter,
            clock=clock or anyio.current_time,
        )
        return self._system

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        assert self._tg is not None
        assert self._system is not None
        system = self._system
        system.closing = True
        self._tg.cancel_scope.cancel()
        if isinstance(exc, anyio.get_cancelled_exc_class()):
            # let the task group absorb the cancellation of its own scope
            if not await self._tg.__aexit__(exc_type, exc, tb):
                return False  # an outer cancellation: it takes precedence
        else:
            # the body's own error must come out as itself, not in an exception group
            await self._tg.__aexit__(None, None, None)
        if system.failure is None:
            return None if exc is None else False
        cancelled = isinstance(exc, anyio.get_cancelled_exc_class())
        if exc is not None and not cancelled and exc is not system.failure.__cause__:
            system.failure.add_note(f"the `async with` body raised meanwhile: {exc!r}")
        raise system.failure


def open_actor_system(
    *,
    propagator: ContextPropagator | None = None,
    dead_letter_limit: int = 1000,
    on_dead_letter: Callable[[DeadLetter], None] | None = None,
    clock: Callable[[], float] | None = None,
) -> AbstractAsyncContextManager[ActorSystem]:
    """Open an actor system; every actor runs inside the ``async with`` block.

    Args:
        propagator: carries trace context in envelope headers (see ContextPropagator).
        dead_letter_limit: how many dead letters ``system.dead_letters`` keeps (newest).
        on_dead_letter: called synchronously for each dead letter; must not raise.
        clock: seconds for restart windows; defaults to ``anyio.current_time``.

    Returns:
        An async context manager yielding the ActorSystem. Leaving it stops every
        actor (see the ``regiment.actors`` docstring for the exact rules) and raises
        ActorFailed if a failure escalated past the top-level actors.
    """
    return _SystemScope(
        propagator=propagator,
        dead_letter_limit=dead_letter_limit,
        on_dead_letter=on_dead_letter,
        clock=clock,
    )
