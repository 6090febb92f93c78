"""A Ray replica's end of a step's two-way channel.

The replica runs the same tool loop and the same :class:`StepCalls` as an
in-process worker; only the run they talk to differs. :class:`ReplicaLog` is
the step's run as the replica sees it: its records go to the caller, which
journals them (a durable one before the replica goes on: a tool's intent
before its body, its result before the model sees it), and the replay the
caller sent answers what is journaled already. :class:`ReplicaApprovals` asks
the caller's approval gate for a decision, and :func:`replica_top_ups` asks the
step's run for a top-up of its budget share. Live events go to the caller
without waiting. This module runs in the Ray process and does not import ``ray``.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import math
import pickle
from collections.abc import Awaitable, Callable
from typing import final

import anyio

from regiment.hierarchy._live_events import LiveSink
from regiment.hierarchy._messages import AssignStep, StepAllowance, StepReport
from regiment.hierarchy._replay import NO_REPLAY, Replay
from regiment.hierarchy._top_up import Need
from regiment.hierarchy.events import Event, TextDelta, ToolCallFinished, ToolCallStarted
from regiment.hierarchy.workers._progress import StepProgress
from regiment.hierarchy.workers._wire import (
    ApprovalAsked,
    CallRecorded,
    LiveEvent,
    RemoteStep,
    StepDone,
    StepMessage,
    TopUpAsked,
    decode_allowance,
    decode_decision,
    encode,
)
from regiment.journal import ModelCallFinished, ModelCallStarted, Record
from regiment.journal import ToolCallFinished as ToolResultRecord
from regiment.journal import ToolCallStarted as ToolIntentRecord
from regiment.tools import ApprovalDecision, ApprovalRequest, Approver, Toolset

__all__ = ("ReplicaApprovals", "ReplicaChannel", "ReplicaLog", "replica_live", "replica_top_ups")


@final
class ReplicaChannel:
    """One step's messages to the caller, and the acks it waits for."""

    __slots__ = ("_acks", "_loop", "_send", "_seq", "outgoing")

    def __init__(self) -> None:
        # Unbounded: live events are sent without waiting, and the step method
        # drains the stream as fast as Ray takes the items.
        self._send, self.outgoing = anyio.create_memory_object_stream[StepMessage](math.inf)
        self._seq = itertools.count(1)
        self._acks: dict[int, tuple[anyio.Event, list[bytes]]] = {}
        # Ray runs the acks' concurrency group on its own thread and event loop:
        # an ack is handed to the step's loop (Ray actors are asyncio-only).
        self._loop = asyncio.get_running_loop()

    def tell(self, message: StepMessage) -> None:
        """Send ``message``; do not wait."""
        self._send.send_nowait(message)

    def tell_anywhere(self, message: StepMessage) -> None:
        """Send ``message`` from any thread (a sync tool's, say); dropped once the step
        has ended (its report was the last message)."""
        try:
            here = asyncio.get_running_loop()
        except RuntimeError:
            here = None
        if here is self._loop:
            self._tell_open(message)
        else:
            self._loop.call_soon_threadsafe(self._tell_open, message)

    def _tell_open(self, message: StepMessage) -> None:
        with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
            self.tell(message)

    def batch(self, first: StepMessage) -> bytes:
        """``first`` and every message sent after it so far, as one item for the caller."""
        messages = [first]
        with contextlib.suppress(anyio.WouldBlock, anyio.EndOfStream):
            while True:
                messages.append(self.outgoing.receive_nowait())
        return encode(messages)

    async def ask(self, message: CallRecorded | ApprovalAsked | TopUpAsked) -> bytes:
        """Send ``message`` (its ``seq`` from :meth:`next_seq`) and wait for its ack."""
        arrived, payload = anyio.Event(), list[bytes]()
        self._acks[message.seq] = (arrived, payload)
        try:
            self.tell(message)
            await arrived.wait()
        finally:
            del self._acks[message.seq]
        return payload[0]

    def next_seq(self) -> int:
        return next(self._seq)

    def ack(self, seq: int, payload: bytes) -> None:
        """The caller's answer to message ``seq``; safe from any thread."""
        self._loop.call_soon_threadsafe(self._deliver, seq, payload)

    def _deliver(self, seq: int, payload: bytes) -> None:
        waiting = self._acks.get(seq)
        if waiting is not None:  # else the step has stopped waiting (cancelled)
            waiting[1].append(payload)
            waiting[0].set()

    def finish(
        self, report: StepReport, tools_version: int = 0, replay: Replay = NO_REPLAY
    ) -> None:
        """Send the report, the step's last message (with the MCP tool lists' version, and
        what of the journal's ``replay`` the step replayed: its report counts those)."""
        done = StepDone(
            report=report,
            tools_version=tools_version,
            replayed=sorted(replay.taken),
            tools_replayed=sorted(replay.tools_taken),
        )
        self.tell(done)
        self._send.close()


@final
class ReplicaLog:
    """The step's run as the replica sees it (a :class:`CallLog`)."""

    __slots__ = ("_channel", "deps", "holds_calls", "kept", "replay", "run_id")
    journaled = True  # every record goes to the caller (which charges usage from it)

    def __init__(self, channel: ReplicaChannel, remote: RemoteStep) -> None:
        self._channel = channel
        self.run_id = remote.assign.run_id
        # Intents go to the caller even with no journal: a replica that dies with a call in
        # flight leaves it to charge that call (``StepConduit.replica_lost``).
        self.kept = True
        # The run's budget limits model calls: intents go even if its share limits no
        # spending (else its share says so: ``limits_spending``).
        self.holds_calls = remote.holds_calls
        # The caller's own bytes: the run's deps, pickled with Ray's cloudpickle.
        self.deps: object = None if remote.deps is None else pickle.loads(remote.deps)
        sent = remote.replay
        self.replay = Replay(
            responses=dict(sent.responses),
            asked=dict(sent.asked),
            intents={(r.plan_version, r.step_id, r.call_index): r for r in sent.intents},
            results={(r.plan_version, r.step_id, r.call_index): r for r in sent.results},
        )

    async def append(self, record: Record, *, durable: bool = False) -> None:
        """Send ``record`` to the caller's journal; ``durable``: wait until it is."""
        if not isinstance(
            record, ModelCallStarted | ModelCallFinished | ToolIntentRecord | ToolResultRecord
        ):
            raise TypeError(f"a replica's step does not journal {type(record).__name__} records")
        channel = self._channel
        if durable:
            await channel.ask(CallRecorded(record=record, seq=channel.next_seq()))
        else:
            channel.tell(CallRecorded(record=record))


@final
class ReplicaApprovals:
    """Approvers that ask the caller's approval gate (an :class:`Approvals`)."""

    __slots__ = ("_channel",)

    def __init__(self, channel: ReplicaChannel) -> None:
        self._channel = channel

    def approver(
        self,
        toolset: Toolset,
        assign: AssignStep,
        call_index: int,
        tool_name: str,
        progress: StepProgress | None = None,
    ) -> Approver | None:
        if toolset.approver is not None:
            return toolset.approver  # the replica's own policy answers at once
        tool = toolset.get(tool_name)
        if tool is None or not tool.requires_approval:
            return None
        channel = self._channel

        async def ask(request: ApprovalRequest, /) -> ApprovalDecision:
            asked = ApprovalAsked(seq=channel.next_seq(), call_index=call_index, request=request)
            return decode_decision(await channel.ask(asked))

        return ask


def replica_live(channel: ReplicaChannel, remote: RemoteStep, worker: str) -> LiveSink | None:
    """The step's live sink when the caller streams the run: its events go over the wire."""
    if not remote.live:
        return None

    def emit(event: Event) -> None:
        if isinstance(event, TextDelta | ToolCallStarted | ToolCallFinished):
            channel.tell(LiveEvent(event=event))

    return LiveSink(remote.assign.run_id, emit, worker)


def replica_top_ups(channel: ReplicaChannel) -> Callable[[Need], Awaitable[StepAllowance | None]]:
    """How a step on the replica asks its run for a top-up (``StepProgress.ask_more``):
    the run, in the team's process, grants it under its rule, or not (``None``)."""

    async def ask_more(need: Need) -> StepAllowance | None:
        return decode_allowance(await channel.ask(TopUpAsked(seq=channel.next_seq(), need=need)))

    return ask_more
