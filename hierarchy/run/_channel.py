"""The channel that carries one run's events to its caller, and how the run ended."""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable, Collection
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import anyio
import anyio.lowlevel
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from regiment.errors import RunError
from regiment.hierarchy._clock import RunClock
from regiment.hierarchy._fence import StepFence
from regiment.hierarchy._result import RunResult
from regiment.hierarchy.events import Event, RunCompleted, RunFailed

if TYPE_CHECKING:
    from regiment.hierarchy._approvals import ApprovalDesk
    from regiment.hierarchy.run._journaling import RunJournal
    from regiment.hierarchy.run._lender import Lender, SupervisorLender
    from regiment.hierarchy.workers._journal_calls import RunCalls

__all__ = ("RunChannel", "RunEvents", "not_executing")


def not_executing() -> None:
    """A nested run's steps in flight before its planner starts: none to tell."""


# Events a reader takes back to back, while more are waiting, before it yields once.
_STREAK = 64


@dataclass(slots=True)
class RunChannel:
    """Carries a run's events to its caller, and the error that ended it, if any."""

    send: MemoryObjectSendStream[Event]
    error: RunError | None = None
    result: RunResult | None = None
    # What a failed run had done before it failed (its counts only; the status and
    # answer are not meaningful): the trace records it on the run span.
    tally: RunResult | None = None
    done: bool = False
    streaming: bool = True
    journal: RunJournal | None = None  # records every event, when the run is journaled
    calls: RunCalls | None = None  # what the workers' tool loops see of the run
    history: str = ""  # the session's earlier runs, for the planner's first request
    clock: RunClock = field(default_factory=RunClock)  # the wall-clock budget, held by approvals
    # The caller of run(), waiting for the end (woken by close()) and running the
    # planner's model calls meanwhile; None when the caller reads the events.
    lender: Lender | None = None
    # Then the team's supervisor runs them (in a task of its own, per burst of calls).
    supervisor: SupervisorLender | None = None
    last: Event | None = None  # a streamed, journaled run's end until it is journaled
    ending: Event | None = None  # the run's last event, read or not (RunEvents.ending)
    # The step this (nested) run serves was cut by its run's pause: this run pauses too,
    # so its steps waiting for decisions read as waiting, not as called off.
    pausing: bool = False
    # The team's approval desk (set as the run starts): whether a step served by a
    # nested run waits, and news for the run above when a nested run has only waits left.
    desk: ApprovalDesk | None = None
    # A nested run's planner's steps in flight while it executes its plan (see
    # NestedWaits.InFlight); None for a top-level run (no planner is asked).
    in_flight: Callable[[], Collection[tuple[int, str, int]] | None] | None = None
    # A nested run's: cut its steps at once (``pausing``: for a pause), when the step
    # it serves is cut; None for a top-level run.
    cut: Callable[[bool], None] | None = None
    # Which of its steps may still start a tool: moved by its planner as it decides a plan
    # is over (``Dispatcher.cancel_all``), read by its in-process steps before each tool.
    fence: StepFence = field(default_factory=StepFence)

    @classmethod
    def open(
        cls, *, streaming: bool, lender: Lender | None = None
    ) -> tuple[RunChannel, MemoryObjectReceiveStream[Event]]:
        """A channel and the stream its events arrive on.

        Args:
            streaming: whether anyone reads the events as they happen; when not
                (``run()``), nothing is sent and the stream only closes at the end.
            lender: the waiting caller of ``run()``, if that is who waits.
        """
        # Unbounded: the planner must never block on a slow reader of events. Typed by
        # the annotation, not ``[Event]``: a subscripted call costs a generic alias call.
        streams: tuple[MemoryObjectSendStream[Event], MemoryObjectReceiveStream[Event]]
        streams = anyio.create_memory_object_stream(math.inf)
        return cls(streams[0], streaming=streaming, lender=lender), streams[1]

    def close(self, event: Event) -> None:
        """Deliver the run's last event and close the stream.

        A streamed, journaled run's last event is journaled now but held back until
        :meth:`deliver_last` (the planner calls it once it has flushed the end
        durably), so its reader never sees the end before the journal has it.
        """
        self.ending = event
        self.fence.top_ups.close()
        if self.streaming and self.journal is not None:
            self.journal.event(event)
            self.done, self.last = True, event
            return
        self.emit(event)
        self.done = True
        self.send.close()
        if self.lender is not None:
            self.lender.wake()

    def deliver_last(self) -> None:
        """Deliver the last event :meth:`close` held back, if any, and close the stream."""
        event, self.last = self.last, None
        if event is not None:
            try:  # noqa: SIM105 - as in emit()
                self.send.send_nowait(event)
            except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                pass
            self.send.close()

    def live(self, event: Event) -> None:
        """Deliver a live event (a text delta, a tool call starting or ending):
        to a streaming reader only, never to the journal."""
        if self.streaming and not self.done:
            try:  # noqa: SIM105 - suppress() would cost three calls per text delta
                self.send.send_nowait(event)
            except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                pass

    def emit(self, event: Event) -> None:
        """Deliver an event; a reader that has gone away is not an error."""
        if self.journal is not None:
            self.journal.event(event)
        if self.streaming:
            try:  # noqa: SIM105 - suppress() would cost two calls per event of every run
                self.send.send_nowait(event)
            except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                pass


class RunEvents:
    """A run's events as its reader takes them (what ``stream()`` yields), and, once
    the run has ended, its last event (``ending``), read or not.

    An event already waiting is taken without a loop turn: the memory stream's
    own ``receive()`` yields to the event loop before every item, a turn per
    event for a reader the planner had already sent several to. A cancelled
    reader still stops at its next event, and one that keeps finding events
    waiting yields every ``_STREAK`` of them, so it never holds the loop long.
    """

    __slots__ = ("_channel", "_check", "_receive", "_streak")

    def __init__(
        self,
        receive: MemoryObjectReceiveStream[Event],
        checkpoint_if_cancelled: Callable[[], Awaitable[None]] | None = None,
        channel: RunChannel | None = None,
    ) -> None:
        self._receive = receive
        self._channel = channel
        self._streak = 0
        # The actor system's, its backend found once; anyio's looks it up per call.
        self._check = checkpoint_if_cancelled or anyio.lowlevel.checkpoint_if_cancelled

    @property
    def ending(self) -> RunCompleted | RunFailed | None:
        """The run's last event (``RunCompleted`` or ``RunFailed``) once it has ended,
        whether or not it was read; ``None`` before.

        A reader that left the ``stream()`` block early (a ``break``, a cancel) finds
        it here after the block: the block's exit cancels the run and waits for it to
        wind down, so this is a ``RunCompleted`` with status ``cancelled`` whose result
        has the plans, step reports and usage the run got to. (``None`` if the run did
        not wind down within its grace: its actor was stopped without an end.)
        """
        ending = None if self._channel is None else self._channel.ending
        return ending if isinstance(ending, RunCompleted | RunFailed) else None

    def __aiter__(self) -> RunEvents:
        return self

    async def __anext__(self) -> Event:
        receive = self._receive
        if self._streak < _STREAK:
            await self._check()
            try:
                event = receive.receive_nowait()
            except anyio.WouldBlock:
                pass
            except anyio.EndOfStream:
                raise StopAsyncIteration from None
            else:
                self._streak += 1
                return event
        self._streak = 0
        try:
            return await receive.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None
