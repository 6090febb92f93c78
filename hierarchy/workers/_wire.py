"""What crosses between the planner's process and a Ray replica: msgspec bytes.

A step goes out as :class:`RemoteStep` (the ``AssignStep`` itself, so the plan
version and the reserved budget allowance travel with it; the W3C trace
context; the step's key, which stays the same when a step is retried on
another replica; what the caller's journal already holds for the step; the
run's deps, pickled). The replica answers on a two-way channel: its step
method streams :data:`StepMessage` s back (items of a Ray streaming generator,
each the messages sent since the last item, so an instant step is one item), and where it must wait for the caller (a tool call's
intent must be durable before its body runs; an approval decision; a top-up
of its budget share) it waits
for an ack the caller sends with a second actor method. Everything is plain
bytes, so Ray's pickling never sees a regiment object on the hot path.
"""

from __future__ import annotations

from typing import TypeAlias

import msgspec

from regiment.hierarchy._messages import AssignStep, StepAllowance, StepReport
from regiment.hierarchy.events import TextDelta, ToolCallFinished, ToolCallStarted
from regiment.journal import ModelCallFinished, ModelCallStarted
from regiment.journal import ToolCallFinished as ToolResultRecord
from regiment.journal import ToolCallStarted as ToolIntentRecord
from regiment.models import ModelResponse
from regiment.tools import ApprovalDecision, ApprovalRequest

__all__ = (
    "ApprovalAsked",
    "CallRecord",
    "CallRecorded",
    "LiveEvent",
    "LiveUpdate",
    "RemoteStep",
    "StepDone",
    "StepMessage",
    "StepReplay",
    "TopUpAsked",
    "decode_allowance",
    "decode_decision",
    "decode_messages",
    "decode_step",
    "encode",
    "step_key",
)

CallRecord: TypeAlias = ModelCallStarted | ModelCallFinished | ToolIntentRecord | ToolResultRecord
"""A journal record a replica's step makes: a model call's intent and response, a tool
intent, a tool result."""

LiveUpdate: TypeAlias = TextDelta | ToolCallStarted | ToolCallFinished
"""A live event of a streamed run, made on the replica."""


class StepReplay(msgspec.Struct, frozen=True, kw_only=True):
    """What the caller's journal holds for one step: the replica replays it.

    Attributes:
        responses: model responses by call key (``step/{version}/{step}/{n}``).
        intents: tool intents (a call with an intent and no result was in flight).
        results: tool results, replayed instead of running the body again.
        asked: the records of those responses with more to say than their reply (a
            call that failed having been sent: ``ModelCallFinished.failed``), by key.
    """

    responses: dict[str, ModelResponse] = {}
    intents: list[ToolIntentRecord] = []
    results: list[ToolResultRecord] = []
    asked: dict[str, ModelCallFinished] = {}


class RemoteStep(msgspec.Struct, frozen=True, kw_only=True, tag="remote_step"):
    """One step for a replica.

    Attributes:
        assign: the step, its plan version, attempt and budget allowance.
        headers: W3C ``traceparent`` / ``tracestate``: the replica's spans join the run's trace.
        key: the step's idempotency key (run, plan version, step, attempt); a retry on
            another replica carries the same one, and a cancel or an ack names it.
        worker: the worker that runs it (a replica of a pool hosts several).
        replay: what the caller's journal already holds for this step.
        deps: the run's deps, pickled (``None``: the run has none).
        live: the run is streamed: the replica sends its live events.
        journal: the run has a journal (a model call's intent is worth a round trip).
        holds_calls: the run's budget limits model calls: the replica tells each call's
            intent first even when the step's share limits no spending, so one cut or
            lost in flight is counted (``StepConduit.step_cut``, ``replica_lost``).
        log_levels: by logger family (``regiment``, an SDK's), the lowest level the
            caller logs: the step's records at that level or above are sent back
            (:class:`LogRecorded`); a family not named: WARNING.
    """

    assign: AssignStep
    headers: dict[str, str] = {}
    key: str = ""
    worker: str = ""
    replay: StepReplay = StepReplay()
    deps: bytes | None = None
    live: bool = False
    journal: bool = True
    holds_calls: bool = False
    log_levels: dict[str, int] = {}


class LogRecorded(msgspec.Struct, frozen=True, kw_only=True, tag="log"):
    """A record a ``regiment`` or SDK logger made on the replica: the caller logs it
    again (``process``: the replica's process id; ``fields``: the record's extras, its
    ``trace_id`` and ``span_id`` among them; ``outside``: made outside a step, not the
    step's whose stream carries it)."""

    name: str
    level: int
    message: str
    created: float
    process: int = 0
    exc_text: str | None = None
    fields: dict[str, str | int | float | bool] = {}
    outside: bool = False


class CallRecorded(msgspec.Struct, frozen=True, kw_only=True, tag="recorded"):
    """A record for the caller's journal; ``seq`` > 0: the replica waits for its ack,
    sent once the record is durable."""

    record: CallRecord
    seq: int = 0


class LiveEvent(msgspec.Struct, frozen=True, kw_only=True, tag="live"):
    """A live event for the run's reader."""

    event: LiveUpdate


class ApprovalAsked(msgspec.Struct, frozen=True, kw_only=True, tag="approval"):
    """Tool call ``call_index`` needs a decision; the ack carries it."""

    seq: int
    call_index: int
    request: ApprovalRequest


class TopUpAsked(msgspec.Struct, frozen=True, kw_only=True, tag="top_up"):
    """The step's share cannot pay for its next call: ``need`` (budget field -> the
    least that helps, what it wants) is asked of its run, under the run's top-up rule;
    the ack carries the step's allowance now (empty: the run cannot spare it)."""

    seq: int
    need: dict[str, tuple[int, int]]


class StepDone(msgspec.Struct, frozen=True, kw_only=True, tag="done"):
    """The step's report: the last message of a step.

    ``tools_version`` counts the replica's MCP tool lists so far: the caller asks for
    the new lists when it changed (a server announced ``tools/list_changed``).
    ``replayed`` and ``tools_replayed``: the journaled replies (by call key) and tool
    calls the step replayed (or ran again), which its report counts; a resume charges
    the rest of its attempt's (a step that stopped part-way never reached them)."""

    report: StepReport
    tools_version: int = 0
    replayed: list[str] = []
    tools_replayed: list[tuple[int, str, int]] = []


StepMessage: TypeAlias = (
    CallRecorded | LiveEvent | ApprovalAsked | TopUpAsked | LogRecorded | StepDone
)
"""What a replica's step sends to the caller."""


def step_key(assign: AssignStep) -> str:
    """``run/version/step/attempt``: the same for every delivery of one attempt."""
    return f"{assign.run_id}/v{assign.plan_version}/{assign.step.id}/{assign.attempt}"


_encoder = msgspec.msgpack.Encoder()
_step_decoder = msgspec.msgpack.Decoder(RemoteStep)
_messages_decoder = msgspec.msgpack.Decoder(list[StepMessage])
_decision_decoder = msgspec.msgpack.Decoder(ApprovalDecision)
_allowance_decoder = msgspec.msgpack.Decoder(StepAllowance)


def encode(value: RemoteStep | list[StepMessage] | ApprovalDecision | StepAllowance) -> bytes:
    """Any of the wire's values, as bytes."""
    return _encoder.encode(value)


def decode_step(data: bytes) -> RemoteStep:
    return _step_decoder.decode(data)


def decode_messages(data: bytes) -> list[StepMessage]:
    """One item of a replica's step stream: the messages it sent since the last item."""
    return _messages_decoder.decode(data)


def decode_decision(data: bytes) -> ApprovalDecision:
    return _decision_decoder.decode(data)


def decode_allowance(data: bytes) -> StepAllowance | None:
    """A top-up's ack: the step's allowance now, or ``None`` (empty: not granted)."""
    return _allowance_decoder.decode(data) if data else None
