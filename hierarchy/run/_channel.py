"""The channel that carries one run's events to its caller, and how the run ended."""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable, Collection
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, final

import anyio
import anyio.lowlevel
import msgspec
import sniffio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from regiment._misuse import Misused
from regiment.errors import RunError
from regiment.hierarchy._clock import RunClock
from regiment.hierarchy._fence import StepFence
from regiment.hierarchy._result import RunResult
from regiment.hierarchy.events import Event, RunCompleted, RunFailed, TextDelta

if TYPE_CHECKING:
    from regiment.hierarchy._approvals import ApprovalDesk
    from regiment.hierarchy.run._journaling import RunJournal
    from regiment.hierarchy.run._lender import Lender, SupervisorLender
    from regiment.hierarchy.workers._journal_calls import RunCalls

__all__ = ("RunChannel", "RunEnd", "RunEvents", "not_executing")


def not_executing() -> None:
    """A nested run's steps in flight before its planner starts: none to tell."""


# Events a reader takes back to back, while more are waiting, before it yields once.
_STREAK = 64
# Events waiting for the reader before its text deltas are joined per call.
_LAG = 256
# The pieces of text an unread delta holds before the last so many are joined into one.
_JOIN = 64


class _Held:
    """A call's first text delta still unread, and its text with the pieces sent since:
    every ``_JOIN`` pieces joined into one string."""

    __slots__ = ("event", "loose", "parts")

    def __init__(self, event: TextDelta) -> None:
        self.event, self.parts, self.loose = event, [event.text], 1

    def add(self, text: str) -> None:
        parts = self.parts
        parts.append(text)
        self.loose += 1
        if self.loose == _JOIN:
            parts[-_JOIN:] = ["".join(parts[-_JOIN:])]
            self.loose = 0

    def taken(self) -> TextDelta:
        """The delta as its reader gets it: with all of the call's text sent since."""
        return msgspec.structs.replace(self.event, text="".join(self.parts))


# A call's deltas (role, worker, step id, call) -> its text delta still unread, if any.
_Unread = dict[tuple[str, str | None, str | None, str], _Held]


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
    # Text deltas sent since the last other event and not read yet, by call: a call's
    # next delta joins its unread one, so a lagging reader holds text, not events.
    unread: _Unread = field(default_factory=dict)
    # The unread deltas that more text joined (by id: each is in the stream till read).
    joined: dict[int, _Held] = field(default_factory=dict)
    sent: int = 0  # events sent to the reader, and taken by it: the difference waits
    taken: int = 0

    @classmethod
    def open(
        cls, *, streaming: bool, lender: Lender | None = None
    ) -> tuple[RunChannel, MemoryObjectReceiveStream[Event]]:
        """A channel and the stream its events arrive on.

        Args:
            streaming: whether anyone reads the events as they happen; when not
                (a nested run's), nothing is sent and the stream only closes at the end.
            lender: the waiting caller of ``run()``, if that is who waits (``lent``
                makes its channel without a stream).
        """
        # Unbounded: the planner must never block on a slow reader of events. Typed by
        # the annotation, not ``[Event]``: a subscripted call costs a generic alias call.
        streams: tuple[MemoryObjectSendStream[Event], MemoryObjectReceiveStream[Event]]
        streams = anyio.create_memory_object_stream(math.inf)
        return cls(streams[0], streaming=streaming, lender=lender), streams[1]

    @classmethod
    def lent(cls, lender: Lender) -> tuple[RunChannel, RunEnd]:
        """The channel of a run whose caller waits for its end, lending its task
        (``run()``, ``resume()``), and what stands in for its events (:class:`RunEnd`)."""
        channel = cls(_NO_READER, streaming=False, lender=lender)
        return channel, RunEnd(channel, lender)

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
        to a streaming reader only, never to the journal.

        Once ``_LAG`` events wait for the reader, a text delta whose call has one
        still unread (sent since the last other event) is added to that one instead
        (the reader gets the text joined), so a reader that lags, or never reads,
        holds a call's text, not each piece of it. Nothing else is joined or dropped.
        """
        if self.streaming and not self.done:
            unread = self.unread
            if type(event) is TextDelta and event.text:
                key = (event.role, event.worker, event.step_id, event.call)
                if self.sent - self.taken >= _LAG:
                    held = unread.get(key)
                    if held is not None:
                        if held.loose == 1 and len(held.parts) == 1:  # its first join:
                            self.joined[id(held.event)] = held  # the reader finds it by id
                        held.add(event.text)
                        return
                    unread[key] = _Held(event)
                elif unread:
                    unread.pop(key, None)  # no later delta of its call moves past it
            elif unread:
                unread.clear()  # no delta moves past another event
            self.sent += 1
            try:  # noqa: SIM105 - suppress() would cost three calls per text delta
                self.send.send_nowait(event)
            except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                pass

    def emit(self, event: Event) -> None:
        """Deliver an event; a reader that has gone away is not an error."""
        if self.journal is not None:
            self.journal.event(event)
        if self.streaming:
            if self.unread:
                self.unread.clear()  # no delta moves past another event
            self.sent += 1
            try:  # noqa: SIM105 - suppress() would cost two calls per event of every run
                self.send.send_nowait(event)
            except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                pass


@final
class RunEnd:
    """Stands in for the events stream of a run whose caller waits for its end, lending
    its task (``run()``, ``resume()``; see ``Lender``): nothing is sent to it, so no
    stream is made (one cost ~200 opcodes a run, bench/README.md's thirtieth round).

    Iterating it yields nothing and ends once the run has (``close_run`` so waits for
    a cancelled run's end), in the caller's task: the lender's wake-up, which the
    run's close wakes, is that task's own."""

    __slots__ = ("_channel", "_lender")

    def __init__(self, channel: RunChannel, lender: Lender) -> None:
        self._channel, self._lender = channel, lender

    def __aiter__(self) -> RunEnd:
        return self

    async def __anext__(self) -> Event:
        await self._lender.until_end(self._channel)
        raise StopAsyncIteration

    def close(self) -> None:
        """Nothing to close: no stream was made."""


# The send side of a lent run's channel (RunEnd): one stream, closed, for all of them
# (closing it again is a no-op; nothing is sent on it, as the run does not stream).
_NO_READER, _none = anyio.create_memory_object_stream[Event](0)
_NO_READER.close()
_none.close()


class RunEvents:
    """A run's events as its reader takes them (what ``stream()`` yields), and, once
    the run has ended, its last event (``ending``), read or not.

    One task reads them: each event goes to one reader, so a second task that reads
    while the first has not ended is refused (a ``ConfigError``, also a ``RuntimeError``)
    rather than left to split the events with it. A reader that lags gets the text deltas of a call that
    piled up meanwhile as one (see ``RunChannel.live``).

    An event already waiting is taken without a loop turn: the memory stream's
    own ``receive()`` yields to the event loop before every item, a turn per
    event for a reader the planner had already sent several to. A cancelled
    reader still stops at its next event, and one that keeps finding events
    waiting yields every ``_STREAK`` of them, so it never holds the loop long.
    """

    __slots__ = ("_channel", "_check", "_current", "_reader", "_receive", "_streak")

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
        self._current: Callable[[], object] | None = None  # the backend's current_task
        self._reader: object = None  # the task that reads the events

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

    def __repr__(self) -> str:
        ending = self.ending
        if isinstance(ending, RunCompleted):
            return f"<RunEvents of run {ending.result.run_id!r}: ended {ending.result.status}>"
        return "<RunEvents: ended, failed>" if ending else "<RunEvents: running>"

    def __aiter__(self) -> RunEvents:
        return self

    async def __anext__(self) -> Event:
        current = self._current
        if current is None or current() is not self._reader:
            self._claim()
        receive = self._receive
        if self._streak < _STREAK:
            await self._check()
            try:
                event = receive.receive_nowait()
            except anyio.WouldBlock:
                pass
            except anyio.EndOfStream:
                raise StopAsyncIteration from None
            except anyio.ClosedResourceError:
                raise _closed() from None
            else:
                self._streak += 1
                return self._taken(event) if self._channel is not None else event
        self._streak = 0
        try:
            event = await receive.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None
        except anyio.ClosedResourceError:
            raise _closed() from None
        return self._taken(event) if self._channel is not None else event

    def _taken(self, event: Event) -> Event:
        """``event``, counted as taken; a text delta with its call's text sent since,
        if more joined it while it waited."""
        channel = self._channel
        assert channel is not None
        channel.taken += 1
        if type(event) is not TextDelta:
            return event
        unread, joined = channel.unread, channel.joined
        if unread:  # taken now: the call's next delta is sent, not joined to this one
            key = (event.role, event.worker, event.step_id, event.call)
            held = unread.get(key)
            if held is not None and held.event is event:
                del unread[key]
        if joined and (held := joined.pop(id(event), None)) is not None:
            return held.taken()
        return event

    def _claim(self) -> None:
        """Make the current task the reader, unless another task reads and has not ended."""
        if self._current is None:
            self._current = current_task_of(sniffio.current_async_library())
        task = self._current()
        if self._reader is not None and not task_ended(self._reader):
            raise Misused(
                "a run's events (RunEvents) are read by one task, and another task reads "
                "these (each event would go to one of them); read them in one task and "
                "hand each event on to the others (e.g. over a memory object stream each)"
            )
        self._reader = task


def _closed() -> Misused:
    return Misused(
        "this run's events are closed: its stream() block was left (which ends the run), "
        "so read them inside the block; after it, events.ending is the run's last event"
    )


def current_task_of(backend: str) -> Callable[[], object]:
    """The running backend's own ``current_task`` (cheaper than anyio's, per event)."""
    if backend == "trio":
        import trio.lowlevel  # trio is only there when it runs

        return trio.lowlevel.current_task
    import asyncio

    return asyncio.current_task


def task_ended(task: object) -> bool:
    """Whether ``task`` (an asyncio or a trio task) has ended."""
    done = getattr(task, "done", None)
    if callable(done):
        return bool(done())
    coro = getattr(task, "coro", None)  # a trio task's: closed once it returned
    return coro is None or getattr(coro, "cr_frame", None) is None
