"""Turns: the planner actor's messages handled one at a time, by whichever task has them.

The actor runtime hands a message to ``receive`` in the actor's own task. A
planner-side model call finishes in another task (the run's ``CallRunner``);
sending its reply to the mailbox would wake the actor's task only to hand the
reply to the handler. Instead, that task *takes a turn*: when no handler is
running, it runs the handler itself, at once; when one is, it waits for the
turn to be passed to it.

A turn is a ``_busy`` flag, and a queue of the tasks waiting for it, each on a
:class:`~regiment.actors.Wakeup` of its own (made only when a task has to wait:
two tasks contend, the actor's for its mailbox and the call runner's, and
rarely at once). The turn is handed straight to the first waiter (the flag
stays set), so a message that comes in meanwhile cannot slip in before it:
handlers run one at a time, in the order their turns were asked for, exactly as
from one mailbox.

A message sent to an idle planner can also be handled at once in the sender's
task (``receive_message_now``), if the actor says it is cheap (``_handle_now``): the run's
``StartRun``, and in a run with no journal that is not nested, a step's report (a
plain call: what is left of it to await, rarely anything, goes on in a task of the
planner's own, which holds the turn until it ends). Any other run's report, handed in
with ``send_here`` by the worker's runner task, is handled in that task as a turn
(``receive_here``). Either way the planner's own task need not wake up for it (one
hop fewer per step), and the runner, its report handled, often takes the very step
the report readied. Both run inside the context the actor's task had when it
started, so context variables (the current actor, a log mark, the trace context of
tasks it starts) stay the planner's, not the sender's.
"""

from __future__ import annotations

import contextvars
import math
from collections import deque
from collections.abc import Awaitable, Mapping
from typing import TYPE_CHECKING, Never, final

import anyio

from regiment.actors import Actor, ActorRef, ContextTurns, Envelope, Wakeup
from regiment.errors import ActorStopped, LeaseLost, RunCancelled, RunError
from regiment.hierarchy._prompts import HookFailed
from regiment.hierarchy.run import _logs as logs
from regiment.hierarchy.run._book import RunBook
from regiment.hierarchy.run._changes import RunAborted, RunChange
from regiment.hierarchy.run._hints import taken_over
from regiment.hierarchy.run._messages import CancelRun, PlannerMessage, StartRun
from regiment.hierarchy.run._own_task import fail_in_own_task
from regiment.hierarchy.run._unreplayed import settle

__all__ = ("TakesTurns", "planner_crashed")


class TakesTurns(Actor[PlannerMessage, None]):
    """Mixed into ``PlannerActor``: ``receive`` and ``take_turn`` run ``_handle``
    one message at a time; ``receive_message_now`` runs ``_handle_now``."""

    # Class defaults: an instance sets them only once it uses them.
    _busy = False  # a handler is running, or the turn was handed to a waiter
    _waiters: deque[_Waiter] | None = None  # made the first time a task has to wait
    _context: contextvars.Context | None = None  # the actor task's, from on_start
    _here: ContextTurns  # runs turns taken in a sender's task in it, from on_start
    # The message types PlannerActor's ``_handle_now`` may take; any other is not tried
    # there (no turn taken and passed, no context entered, issue #22). A run with no
    # journal, not nested, adds a step's report (``PlannerActor.__init__``).
    _now_types: tuple[type, ...] = (StartRun, CancelRun)

    _book: RunBook

    def _handle(self, message: PlannerMessage) -> Awaitable[None]:
        raise NotImplementedError  # PlannerActor's (awaited at once)

    def _abort(self, error: RunError) -> None:
        raise NotImplementedError  # PlannerActor's

    def _end(self) -> None:
        raise NotImplementedError  # PlannerActor's

    def _record(self, change: RunChange) -> None:
        raise NotImplementedError  # PlannerActor's

    if TYPE_CHECKING:  # (GuardedActor's: no placeholder at run time, it comes later in the MRO)

        def _note_guards(self) -> None: ...

    def _stopped_early(self) -> None:
        """The planner stops before its run ended (its ``on_stop``). A task of its own
        raised (a handler's failure went through ``_failed`` already): the run fails
        with it, not as cancelled, and its steps in flight are cancelled, not left
        working for a run that is over. Otherwise the team is stopping under the run."""
        crash = self.ctx.failure
        if crash is None:
            self._note_guards()  # as ``_end``: what the guards' judges spent, not charged yet
            settle(self._book.channel.journal)  # resumed: its replies never replayed
            self._record(RunAborted(RunCancelled(_TEAM_STOPPED)))
            return
        try:
            self._book.dispatcher.cancel_all(self.ctx, "the run failed")
        except RuntimeError:  # a full mailbox's cancel needs a task: none now
            logs.cancel_not_sent(self._book.run_id)
        self._end()
        self._record(RunAborted(planner_crashed(crash)))

    def _handle_now(self, message: PlannerMessage) -> Awaitable[None] | bool:
        """Handle ``message`` without awaiting, if that is cheap; ``False`` to queue it.
        What is left to await, if it turns out to need a wait: a task of the actor's own
        awaits it, holding the turn until it ends (``_end_turn``)."""
        return False

    async def on_start(self) -> None:
        self._context = context = contextvars.copy_context()
        self._here = ContextTurns(context)

    async def receive(self, message: PlannerMessage) -> None:
        await self.take_turn(message)

    async def take_turn(self, message: PlannerMessage) -> None:
        """Handle ``message`` in this task, once no other handler runs."""
        if self._busy:
            await self._wait_turn()
        else:
            self._busy = True
        try:
            await self._handle(message)
        except Exception as exc:
            self._failed(message, exc)
            raise
        finally:
            self._pass_turn()

    def receive_message_now(
        self,
        message: PlannerMessage,
        sender: ActorRef[Never, object] | None,
        headers: Mapping[str, str],
    ) -> bool:
        context = self._context  # (no envelope is made for what it takes, #22)
        if self._busy or context is None or type(message) not in self._now_types:
            return False
        self._busy = True
        rest: Awaitable[None] | bool = False
        try:
            rest = context.run(self._handle_now, message)
            if rest is not True and rest is not False:  # the turn goes on in a task (rare)
                context.run(self.ctx.start_soon, self._end_turn, message, rest)
            return rest is not False
        except Exception as exc:
            rest = False
            context.run(self._failed, message, exc)
            # It must not raise into the sender: the actor fails from a task of its
            # own instead, as if its handler had raised (its supervisor is told; a
            # planner already stopped cannot fail: what it could not do is logged).
            context.run(fail_in_own_task, self.ctx, type(message).__name__, exc)
            return True
        finally:
            if rest is True or rest is False:  # the turn ends here
                if self._waiters:  # to the first waiter
                    self._pass_turn()
                else:  # nobody waits (the usual report): no call for it, #22
                    self._busy = False

    async def _end_turn(self, message: PlannerMessage, rest: Awaitable[None]) -> None:
        """What is left of a turn ``receive_message_now`` took, in a task of the actor's own."""
        try:
            await rest
        except Exception as exc:
            self._failed(message, exc)
            raise
        finally:
            self._pass_turn()

    def receive_here(self, envelope: Envelope[PlannerMessage, None]) -> Awaitable[None] | None:
        context = self._context
        if self._busy or context is None:
            return None
        return self._here.run(self._turn_here(envelope.message))  # no StopIteration (#22)

    async def _turn_here(self, message: PlannerMessage) -> None:
        """A turn in the sender's task (inside the actor's context, see ``receive_here``)."""
        self._busy = True  # set here, not before: a handling never awaited holds no turn
        try:
            await self._handle(message)
        except Exception as exc:
            self._failed(message, exc)
            fail_in_own_task(self.ctx, type(message).__name__, exc)
        finally:
            self._pass_turn()

    def _failed(self, message: PlannerMessage, exc: Exception) -> None:
        """A handler raised ``exc``; before the actor fails (and its supervisor sees
        it), the run fails with it as the cause."""
        if not self._book.channel.done:
            if isinstance(exc, ActorStopped) and _team_stopping(self.ctx.system.closing):
                # The team is stopping under the run (its actor system closes, or the
                # scope around the team was cancelled) and a worker stopped first,
                # while this handler still sent to it: cancelled, as ever when the
                # team stops under a run (``_stopped_early``), not failed.
                self._abort(RunCancelled(_TEAM_STOPPED))
                return
            failure = _handler_failed(message, exc, self._book)
            self._abort(failure)  # at once: the actor is failing

    async def _wait_turn(self) -> None:
        waiters = self._waiters
        if waiters is None:
            waiters = self._waiters = deque()
        waiter = _Waiter(self.ctx.system.new_wakeup())
        waiters.append(waiter)
        try:
            while not waiter.handed:
                await waiter.wakeup.wait()
        except BaseException:
            if waiter.handed:  # handed the turn, then cancelled before it ran: pass it on
                self._pass_turn()
            else:
                waiters.remove(waiter)
            raise

    def _pass_turn(self) -> None:
        waiters = self._waiters
        if waiters:  # straight to the first waiter: the turn is never free meanwhile
            waiter = waiters.popleft()
            waiter.handed = True
            waiter.wakeup.wake()
        else:
            self._busy = False


@final
class _Waiter:
    """A task waiting for its turn (one each: the turn goes to a task, in order)."""

    __slots__ = ("handed", "wakeup")

    def __init__(self, wakeup: Wakeup) -> None:
        self.wakeup = wakeup
        self.handed = False


_TEAM_STOPPED = "the run's planner stopped before the run finished (the team stopped)"


def _team_stopping(closing: bool) -> bool:
    """Whether the team is stopping: its actor system closes, or this task's scope was
    cancelled (the team's caller cancelled it: every actor's task is cancelled at once)."""
    return closing or anyio.current_effective_deadline() == -math.inf


def planner_crashed(exc: Exception) -> RunError:
    """The error of a run whose planner failed outside a handler (a task of its own
    raised): the run fails with it as the cause; it was not cancelled."""
    error = RunError(f"the run's planner crashed: {type(exc).__name__}: {exc}")
    error.__cause__ = exc
    return error


def _handler_failed(message: PlannerMessage, exc: Exception, book: RunBook) -> RunError:
    journal = book.channel.journal
    if isinstance(exc, LeaseLost) and journal is not None:  # another process took the run
        error = RunError(taken_over(book.run_id, exc, journal.store))
        error.__cause__ = exc
        return error
    if isinstance(exc, HookFailed):  # it names the hook and what to do
        return exc.run_error()
    error = RunError(
        f"the run's planner failed while handling {type(message).__name__}: "
        f"{type(exc).__name__}: {exc}"
    )
    error.__cause__ = exc
    return error
