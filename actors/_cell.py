"""One actor's runtime side: its mailbox and the sending side, the loop taking its mail,
restarts and escalation (an instance's own life is ``_life``'s)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Generic, TypeVar, cast

import anyio
from anyio.abc import TaskStatus

from regiment.actors._actor import Actor, inline_takers
from regiment.actors._dormant import Sleeper, start_dormant, stop_dormant, wake_dormant
from regiment.actors._incarnation import Incarnation
from regiment.actors._life import gave_up, handle, handle_signals, incarnate
from regiment.actors._mailbox import Mailbox
from regiment.actors._messages import ChildFailed, DeadLetterReason, Envelope
from regiment.actors._policy import RestartPolicy, RestartWindow
from regiment.actors._ref import ActorRef, current_actor
from regiment.actors._retire import retire
from regiment.actors._stopped import Stopped
from regiment.errors import ActorFailed, ActorStopped, ConfigError, MailboxFull

if TYPE_CHECKING:
    from regiment.actors._system import ActorSystem

__all__ = ("Cell",)

M = TypeVar("M")
R = TypeVar("R")
CM = TypeVar("CM")
CR = TypeVar("CR")

_FAIRNESS = 64  # messages handled back to back before the loop yields once


class Cell(Generic[M, R]):
    """The runtime side of one actor: mailbox, restart window, current instance."""

    def __init__(
        self,
        system: ActorSystem,
        factory: Callable[[], Actor[M, R]],
        name: str,
        capacity: int,
        restart: RestartPolicy,
        parent: Callable[[ChildFailed], None] | None,
    ) -> None:
        if capacity < 1:
            raise ConfigError(f"actor {name!r}: mailbox capacity must be >= 1, got {capacity}")
        self.system = system
        self.capacity = capacity
        self.factory = factory
        self.name = name
        self.parent = parent
        self.mailbox: Mailbox[Envelope[M, R]] = Mailbox(
            capacity, system.new_wakeup, system.checkpoint
        )
        self.ref: ActorRef[M, R] = ActorRef(self, name)
        self.window = RestartWindow(restart, system.clock)
        self.accepting = True
        self.started = False
        self.stopped = Stopped(system.new_wakeup, system.checkpoint)
        self.sleeper: Sleeper[M, R] | None = None  # while it is dormant (see _dormant)
        # The instance whose receive_now() or receive_here() may take a sent message
        # in the sender's task; set only while its loop waits for mail (or it is
        # dormant) and it defines one of them.
        self.inline: Actor[M, R] | None = None
        # The same instance while it may take one, if it defines receive_message_now:
        # offered a sent message before any envelope is made (ActorRef's sends).
        self.bare: Actor[M, R] | None = None

    def child(
        self,
        factory: Callable[[], Actor[CM, CR]],
        name: str,
        capacity: int,
        restart: RestartPolicy,
        parent: Callable[[ChildFailed], None],
    ) -> Cell[CM, CR]:
        """A cell for a child actor in the same system, escalating to ``parent``."""
        return Cell(self.system, factory, name, capacity, restart, parent=parent)

    # -- the sending side -------------------------------------------------

    async def deliver(self, envelope: Envelope[M, R]) -> None:
        # Fast path: room in the mailbox (or the actor waiting for mail) needs no
        # checkpoint; only a full mailbox makes the sender wait.
        inline = self.inline  # an idle actor with nothing queued may take it in this task
        if (
            inline is not None
            and envelope.reply_to is None
            and (self.mailbox.waiting or self.idle)  # the attribute first: a waiting task's
            and inline.receive_now(envelope)
        ):
            return
        try:
            self.mailbox.put_nowait(envelope)
        except anyio.WouldBlock:
            try:
                await self.mailbox.put(envelope)
            except anyio.ClosedResourceError:
                self.refuse(envelope)
        except anyio.ClosedResourceError:
            self.refuse(envelope)
        if self.sleeper is not None:  # queued mail needs the actor's task
            wake_dormant(self)

    def deliver_here(self, envelope: Envelope[M, R]) -> Awaitable[None] | None:
        """Queue ``envelope``, or have an idle actor (``idle`` spelled out: a step's report
        asks, #22) take it in the sender's task, then returning what handles it, to await."""
        inline = self.inline
        if (
            inline is not None
            and envelope.reply_to is None
            and (self.mailbox.waiting or (self.sleeper is not None and not self.system.closing))
        ):
            if inline.receive_now(envelope):
                return None
            here = inline.receive_here(envelope)
            if here is not None:
                return here
        self._queue_nowait(envelope)
        return None

    def deliver_nowait(self, envelope: Envelope[M, R]) -> None:
        # An idle actor with nothing queued takes it in the sender's task (no frame
        # between: a plan step is sent this way, issue #22).
        inline = self.inline
        if (
            inline is not None
            and envelope.reply_to is None
            and (self.mailbox.waiting or self.idle)  # the attribute first: a waiting task's
            and inline.receive_now(envelope)
        ):
            return
        self._queue_nowait(envelope)

    def _queue_nowait(self, envelope: Envelope[M, R]) -> None:
        try:
            self.mailbox.put_nowait(envelope)
        except anyio.WouldBlock:
            raise MailboxFull(
                f"mailbox of actor {self.name!r} is full ({self.capacity} messages);"
                " use `await send(...)` to wait for room"
            ) from None
        except anyio.ClosedResourceError:
            self.refuse(envelope)
        if self.sleeper is not None:  # queued mail needs the actor's task
            wake_dormant(self)

    @property
    def idle(self) -> bool:
        """Its task waits for mail with none queued, or it has no task yet (dormant):
        a sent message may be taken in the sender's task. Not a dormant actor once
        the system closes: mail then queues, and the task it starts ends at once."""
        return self.mailbox.waiting or (self.sleeper is not None and not self.system.closing)

    def refuse(self, envelope: Envelope[M, R]) -> None:
        self.system.dead_letter(self.name, envelope, "stopped")
        raise ActorStopped(
            f"actor {self.name!r} has stopped; the {type(envelope.message).__name__} message"
            " went to the dead letters"
        )

    def close_mailbox(self) -> None:
        self.accepting = False
        self.mailbox.close()

    def wake(self) -> None:
        """Unblock a loop waiting for mail so it notices a child's escalation."""
        self.mailbox.wake()

    def start_dormant(self, host: Incarnation[object, object]) -> None:
        """Start the actor here, with no task until it needs one (``_dormant``)."""
        start_dormant(self, host)

    def wake_task(self) -> None:
        """A dormant actor needs its task now: start it (in its parent's task group)."""
        wake_dormant(self)

    async def stop_without_task(self, shielded: bool = False) -> None:
        """Stop a dormant actor: ``on_stop`` in this task, then retire (see ``stop``)."""
        await stop_dormant(self, shielded)

    # -- the actor's task -------------------------------------------------

    async def run(
        self,
        *,
        task_status: TaskStatus[ActorRef[M, R]] = anyio.TASK_STATUS_IGNORED,
        first: tuple[Actor[M, R], Incarnation[M, R]] | None = None,
    ) -> None:
        """The actor's task: incarnations until a graceful end, escalation or cancellation.

        ``first``: a dormant actor's instance, already started (see ``_dormant``).
        """
        current_actor.set(cast("ActorRef[object, object]", self.ref))
        reason: DeadLetterReason = "cancelled"
        status: TaskStatus[ActorRef[M, R]] | None = task_status
        try:
            while True:
                failure = await incarnate(self, status, first)
                first = None
                if failure is None:
                    return
                if not self.started:
                    raise ActorFailed(
                        f"actor {self.name!r} failed to start: {failure!r}"
                    ) from failure
                status = None
                if not self.accepting or not self.window.record_failure():
                    reason = "failed"
                    self._escalate(failure)
                    return
        finally:
            retire(self, reason)

    async def _live(
        self, instance: Actor[M, R], incarnation: Incarnation[M, R]
    ) -> Exception | None:
        failure = await self._take_mail(instance, incarnation)
        if failure is None:
            # graceful end: escalations that raced the last message still count
            failure = await handle_signals(instance, incarnation)
        if failure is None:
            await incarnation.stop_children()
            # a child that failed while draining escalated to us meanwhile
            failure = await handle_signals(instance, incarnation)
        return failure

    async def _take_mail(
        self, instance: Actor[M, R], incarnation: Incarnation[M, R]
    ) -> Exception | None:
        """Handle mail (and children's escalations) until the mailbox ends or one fails.

        One frame, not a loop inside a helper: every wake-up of the actor resumes
        each coroutine frame between its task and the mailbox's wait.
        """
        self.inline, self.bare = inline_takers(instance)
        ctx = instance.ctx
        mailbox = self.mailbox
        streak = 0
        # After answering an ask, linger: the asker often asks again at once. A flag,
        # not the last envelope: the loop must not keep a handled message alive.
        linger = False
        try:
            while True:
                if incarnation.signals:
                    failure = await handle_signals(instance, incarnation)
                    if failure is not None:
                        return failure
                if mailbox.items:
                    if streak == _FAIRNESS:
                        # mail kept coming without a wait: let other tasks run now and then
                        streak = 0
                        await self.system.checkpoint()
                    streak += 1
                else:
                    streak = 0
                try:
                    # No checkpoint while mail is queued; None: woken to look at signals.
                    envelope = await mailbox.get(linger=linger)
                except anyio.EndOfStream:
                    return None
                if envelope is not None:
                    linger = envelope.reply_to is not None
                    failure = await handle(self, instance, ctx, envelope)
                    envelope = None
                    if failure is not None:
                        return failure
                else:
                    linger = False
        finally:
            self.inline = self.bare = None

    def _escalate(self, failure: Exception) -> None:
        if self.parent is not None:
            self.parent(
                ChildFailed(child=cast("ActorRef[object, object]", self.ref), error=failure)
            )
        else:
            self.system.fail(gave_up(self.name, self.window, self.accepting, failure))
