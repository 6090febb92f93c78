"""Live events: what a streamed run's model calls and tool calls send straight to its reader.

``TextDelta``, ``ToolCallStarted`` and ``ToolCallFinished`` are progress, not
run state: they skip the planner's book and the journal and go to the run's
event stream as they happen. Only a run someone streams gets them; for any
other run there is no :class:`LiveSink`, and models answer in one piece.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol, final

import anyio

from regiment._json import JsonObject
from regiment.hierarchy._fence import StepFence
from regiment.hierarchy._text import valid_text
from regiment.hierarchy.events import Event, TextDelta, ToolCallFinished, ToolCallStarted
from regiment.models import (
    DeltaHandler,
    Model,
    ModelRequest,
    ModelResponse,
    PartDelta,
    StreamRestart,
    TextPartDelta,
    ToolCallPart,
    stream_response,
)
from regiment.tools import (
    ApprovalDecision,
    ApprovalRequest,
    Approver,
    RunContext,
    ToolResult,
    Toolset,
    ask_approver,
)

__all__ = (
    "EventSink",
    "LiveChannel",
    "LiveSink",
    "live_sink",
    "new_call",
    "observed_tool_call",
    "told_unrun",
)

EventSink = Callable[[Event], None]
"""Delivers one event to a run's reader without waiting."""

# Each model call's ``TextDelta.call``: this process's mark (a step on a Ray replica
# streams from another process) and a number, new for every call.
_mark = os.urandom(4).hex()
_numbers = itertools.count(1)


def _renew_mark() -> None:
    """A forked child streams calls of its own: it gets a mark of its own."""
    global _mark, _numbers  # the process's, renewed once per fork
    _mark, _numbers = os.urandom(4).hex(), itertools.count(1)


os.register_at_fork(after_in_child=_renew_mark)


def new_call() -> str:
    """A model call's ``TextDelta.call``: unique to it among the run's calls."""
    return f"{_mark}.{next(_numbers)}"


@final
@dataclass(frozen=True, slots=True)
class LiveSink:
    """Where one streamed run's live events go.

    Attributes:
        run_id: the run.
        emit: delivers an event to the run's reader.
        worker: the worker whose step this sink serves (``""`` for the planner's side).
    """

    run_id: str
    emit: EventSink
    worker: str = ""

    async def streamed(self, model: Model, request: ModelRequest) -> ModelResponse:
        """``model``'s reply to ``request``, its text streamed to the reader as the
        ``TextDelta`` s of one call (``new_call()``); a refusal is told once it has."""
        call = new_call()  # the reader keys this call's text on it
        response = await stream_response(model, request, self.text_handler(request, call))
        if response.refused:  # its text reached the reader: say it was declined
            self.refused(request, call)
        return response

    @staticmethod
    def new_call() -> str:
        """A model call's ``TextDelta.call`` (see ``new_call``)."""
        return new_call()

    def text_handler(self, request: ModelRequest, call: str) -> DeltaHandler:
        """A delta handler that turns the text of ``request``'s reply into ``TextDelta`` s
        of the model call ``call`` (``new_call()``, the same on each of them).

        A ``StreamRestart`` (the call is made again) becomes a ``TextDelta`` with
        ``void`` set to how many characters of the text it handed out are void."""
        run_id, emit = self.run_id, self.emit
        role = request.role or "worker"
        worker, step_id = request.worker, request.step_id
        told = 0  # characters handed out
        starts: dict[int, int] = {}  # a text part's index -> where its text began in them

        async def on_delta(delta: PartDelta) -> None:
            nonlocal told
            if isinstance(delta, TextPartDelta) and delta.text:
                text = valid_text(delta.text)
                if delta.index not in starts:
                    starts[delta.index] = told
                told += len(text)
                emit(
                    TextDelta(
                        run_id=run_id,
                        role=role,
                        text=text,
                        worker=worker,
                        step_id=step_id,
                        call=call,
                    )
                )
            elif isinstance(delta, StreamRestart):
                void = [index for index in starts if index >= delta.index]
                if void:  # the text of those parts is void: it comes again
                    since = min(starts.pop(index) for index in void)
                    told, voided = since, told - since
                    emit(
                        TextDelta(
                            run_id=run_id,
                            role=role,
                            text="",
                            worker=worker,
                            step_id=step_id,
                            void=voided,
                            call=call,
                        )
                    )

        return on_delta

    def refused(self, request: ModelRequest, call: str) -> None:
        """Tell the reader the reply to ``request`` it was streamed (as ``call``) is a refusal."""
        self.emit(
            TextDelta(
                run_id=self.run_id,
                role=request.role or "worker",
                text="",
                worker=request.worker,
                step_id=request.step_id,
                refused=True,
                call=call,
            )
        )

    def tell(self, request: ModelRequest, text: str) -> None:
        """Hand ``text``, the reply to ``request``, to the reader in one piece: a reply
        held back while guards judged it (a reader never sees text they tripped on)."""
        if text:
            self.emit(
                TextDelta(
                    run_id=self.run_id,
                    role=request.role or "worker",
                    text=valid_text(text),
                    worker=request.worker,
                    step_id=request.step_id,
                    call=new_call(),
                )
            )


class LiveChannel(Protocol):
    """A run's event channel as live events see it (``RunChannel`` is one)."""

    streaming: bool
    # Which of the run's steps may still start a tool (its planner moves it, see StepFence).
    fence: StepFence

    def live(self, event: Event) -> None:
        """Deliver a live event to the run's reader."""
        ...


def live_sink(channel: LiveChannel | None, run_id: str, worker: str = "") -> LiveSink | None:
    """Where ``run_id``'s live events go: its channel, when someone streams the run."""
    if channel is None or not channel.streaming:
        return None
    return LiveSink(run_id, channel.live, worker)


async def observed_tool_call(
    toolset: Toolset,
    call: ToolCallPart,
    *,
    live: LiveSink | None,
    step_id: str,
    context: RunContext[object] | None = None,
    approver: Approver | None = None,
) -> ToolResult:
    """``toolset.call`` for one of a step's tool calls, told to ``live`` as it starts and ends.

    A call cut while it ran is told as finished with the outcome ``"cut"`` (its body
    started and may have acted), or ``"awaiting_approval"`` if it waited for a decision
    (its body has not run); one that raised with the exception's class name.
    """
    if live is None:
        return await toolset.call(
            call.name, call.arguments, call_id=call.id, context=context, approver=approver
        )
    arguments = dict(call.arguments)
    _tell_started(live, call, step_id, arguments)
    started = anyio.current_time()
    outcome = "cut"  # unless it returns or raises: cancelled as its body ran
    wait = _Wait()
    if approver is not None:
        approver = _told_while_waiting(approver, wait)
    try:
        result = await toolset.call(
            call.name, call.arguments, call_id=call.id, context=context, approver=approver
        )
        outcome = (result.error_type or "error") if result.is_error else "ok"
        return result
    except Exception as exc:
        outcome = type(exc).__name__
        raise
    finally:
        now = anyio.current_time()
        if wait.since is not None and outcome == "cut":
            outcome = "awaiting_approval"
        waited = wait.seconds(now)
        _tell_finished(live, call, step_id, arguments, (now - started - waited, waited), outcome)


@final
class _Wait:
    """How long a call has waited for approval decisions: ``since`` (while it waits, when
    it was asked) and ``total`` (the waits that ended)."""

    __slots__ = ("since", "total")

    def __init__(self) -> None:
        self.since: float | None = None
        self.total = 0.0

    def seconds(self, now: float) -> float:
        return self.total + (0.0 if self.since is None else now - self.since)


def _told_while_waiting(approver: Approver, wait: _Wait) -> Approver:
    """``approver``, timed by ``wait`` while it has not decided."""

    async def decide(request: ApprovalRequest, /) -> ApprovalDecision:
        wait.since = anyio.current_time()
        decision = await ask_approver(approver, request)  # cut: it is still waiting
        wait.total, wait.since = wait.seconds(anyio.current_time()), None
        return decision

    return decide


def told_unrun(live: LiveSink, call: ToolCallPart, step_id: str, outcome: str, took: float) -> None:
    """Tell ``live`` of a call that ended before its tool was reached (a guardrail refused
    it, or its rewritten arguments did not validate), as a call whose tool failed is told:
    started, then finished with ``outcome`` (``"guardrail"``, ``"invalid_arguments"``, or
    ``"GuardrailError"`` when the refusal fails the step); ``took`` is how long it was judged.
    """
    arguments = dict(call.arguments)
    _tell_started(live, call, step_id, arguments)
    _tell_finished(live, call, step_id, arguments, (took, 0.0), outcome)


def _tell_started(live: LiveSink, call: ToolCallPart, step_id: str, arguments: JsonObject) -> None:
    live.emit(
        ToolCallStarted(
            run_id=live.run_id,
            worker=live.worker,
            step_id=step_id,
            tool=call.name,
            call_id=call.id,
            arguments=arguments,
        )
    )


def _tell_finished(
    live: LiveSink,
    call: ToolCallPart,
    step_id: str,
    arguments: JsonObject,
    took: tuple[float, float],
    outcome: str,
) -> None:
    """Emit the call's ``ToolCallFinished``; ``took``: its own seconds, then its wait for
    approval decisions."""
    live.emit(
        ToolCallFinished(
            run_id=live.run_id,
            worker=live.worker,
            step_id=step_id,
            tool=call.name,
            call_id=call.id,
            arguments=arguments,
            duration=max(0.0, took[0]),
            approval_wait=took[1],
            outcome=outcome,
        )
    )
