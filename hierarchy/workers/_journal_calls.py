"""A worker's side of a run's journal: its model responses and tool calls.

Each tool call's intent is appended durably *before* the tool body runs, and
its result durably after, keyed by (run, plan version, step, call index); each model
response is appended with its usage under ``step/{version}/{step}/{n}``, and, under a
spending budget, the call's intent (the most it may spend) durably before it is sent. On a
resume the same keys come round again: a journaled response is replayed, not
re-sent; a journaled result is replayed, not re-executed; an intent without a
result (the call was in flight at the crash) runs again with the intent's
idempotency key, so the tool can deduplicate.

Without a journal the same objects still hand every tool its ``RunContext``.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from typing import Protocol, final

import anyio
import msgspec
from opentelemetry import trace

from regiment._json import JsonObject
from regiment.errors import JournalError, ModelError
from regiment.hierarchy._in_flight import StepCut, journal_intent, limits_spending, most_spent
from regiment.hierarchy._live_events import LiveSink, observed_tool_call, told_unrun
from regiment.hierarchy._messages import AssignStep
from regiment.hierarchy._model_call import ModelCaller
from regiment.hierarchy._replay import NO_REPLAY, Replay
from regiment.hierarchy.guard._judge import JudgeTape
from regiment.hierarchy.guard._note import GuardNote
from regiment.hierarchy.guard._tape import failure, raised_again
from regiment.journal import (
    Journal,
    Lease,
    ModelCallFinished,
    ModelCallStarted,
    Record,
    ToolCallFinished,
    ToolCallStarted,
)
from regiment.models import ModelRequest, ModelResponse, ToolCallPart
from regiment.telemetry import current_span_id
from regiment.telemetry import semconv as sc
from regiment.tools import Approver, RunContext, ToolResult, Toolset

__all__ = ("CallLog", "RunCalls", "RunLookup", "StepCalls", "derived_key", "step_key")

_CHAT = {sc.GEN_AI_OPERATION_NAME: sc.OPERATION_CHAT}  # what was replayed: a model reply


def derived_key(run_id: str, plan_version: int, step_id: str, call_index: int) -> str:
    """The idempotency key of a call whose tool declares none: stable across resumes."""
    return f"{run_id}/v{plan_version}/{step_id}/{call_index}"


@final
class RunCalls:
    """What a run gives its workers' tool loops: its deps and, when journaled, its journal."""

    __slots__ = ("deps", "error", "holds_calls", "journal", "lease", "replay", "run_id")

    def __init__(
        self,
        run_id: str,
        deps: object = None,
        journal: Journal | None = None,
        lease: Lease | None = None,
        replay: Replay = NO_REPLAY,
    ) -> None:
        self.run_id = run_id
        self.deps = deps
        self.journal = journal
        self.lease = lease
        self.replay = replay
        self.error: JournalError | None = None  # a failed write: the run fails with it
        # Its budget limits model calls (``holds_calls``): a step's calls journal their
        # intents even when its share limits no spending (set as the run starts).
        self.holds_calls = False

    @property
    def journaled(self) -> bool:
        """Whether records go anywhere (no journal: a step builds none)."""
        return self.journal is not None

    @property
    def kept(self) -> bool:
        """Whether a journal keeps the records (a model call's intent is written only then)."""
        return self.journal is not None

    async def append(self, record: Record, *, durable: bool = False) -> None:
        if self.journal is None or self.lease is None:
            return
        if self.error is not None:
            raise self.error
        try:
            await self.journal.append(self.lease, record, durable=durable)
        except JournalError as exc:
            self.error = exc
            raise


def step_key(assign: AssignStep, n: int) -> str:
    """The journal key of the step's model call number ``n``: ``step/{version}/{step}/{n}``;
    a later attempt of the step keys its calls apart (``.../a{attempt}/{n}``), so it is
    never handed an earlier attempt's reply or failure (a first attempt's keys are those
    of older journals)."""
    if assign.attempt == 1:
        return f"step/{assign.plan_version}/{assign.step.id}/{n}"
    return f"step/{assign.plan_version}/{assign.step.id}/a{assign.attempt}/{n}"


RunLookup = Callable[[str], RunCalls | None]
"""How a worker finds the run a step belongs to (``None``: it has ended)."""


class CallLog(Protocol):
    """What :class:`StepCalls` needs of its run: :class:`RunCalls` in the run's process;
    on a Ray replica, a log whose records go to the caller's journal over the wire."""

    @property
    def run_id(self) -> str: ...
    @property
    def deps(self) -> object: ...
    @property
    def replay(self) -> Replay: ...
    @property
    def journaled(self) -> bool: ...
    @property
    def kept(self) -> bool: ...
    @property
    def holds_calls(self) -> bool:
        """Whether the run's budget limits its model calls: each call's intent is kept."""
        ...

    async def append(self, record: Record, *, durable: bool = False) -> None:
        """Journal ``record`` (``durable``: before this returns)."""
        ...


@final
class StepCalls:
    """One step's model and tool calls, journaled and replayed by key. Without a run (a
    worker driven on its own) or a journal, nothing is keyed or recorded: only a resumed
    run's replay and a journal read the keys."""

    __slots__ = (
        "_assign",
        "_bounded",
        "_cut",
        "_deps",
        "_journaled",
        "_live",
        "_model_calls",
        "_notes",
        "_replay",
        "_run",
        "_run_id",
        "_tape",
        "_tool_calls",
        "_worker",
    )

    def __init__(
        self,
        run: CallLog | None,
        assign: AssignStep,
        worker: str,
        live: LiveSink | None = None,
        cut: StepCut | None = None,
    ) -> None:
        self._run = run
        if run is None:
            self._run_id, self._deps = assign.run_id, None
            self._replay, self._journaled = NO_REPLAY, False
        else:  # a run's log is fixed for its life: read it once a step, not once a call
            self._run_id, self._deps, self._replay = run.run_id, run.deps, run.replay
            self._journaled = run.journaled
        self._assign = assign
        # Under a budget on model calls or spending each call's intent is journaled
        # (durably) before it is sent.
        self._bounded = (
            run is not None and run.kept and (run.holds_calls or limits_spending(assign.allowance))
        )
        # A call cut in flight is charged to the run at its most, journal or not
        # (``cut``: ``step_cut`` of the run's ledger, if its budget needs it).
        self._cut = cut
        self._worker = worker
        self._live = live  # a streamed run's: text deltas and tool-call events go to it
        self._model_calls = 0
        self._tool_calls = 0
        self._tape: JudgeTape | None = None
        self._notes: dict[int, list[JsonObject]] = {}  # by call: its guards' rewrites

    def model_call(self, caller: ModelCaller) -> Callable[[ModelRequest], Awaitable[ModelResponse]]:
        """How the step asks ``caller`` with no guards in between: through :meth:`model`,
        or straight (a frame fewer a call) when nothing is replayed, recorded or streamed."""
        if self._live is None and not (
            self._replay.responses or self._journaled or self._cut is not None
        ):
            return caller.call
        return functools.partial(self.model, caller)

    async def model(
        self, caller: ModelCaller, request: ModelRequest, *, held: bool = False
    ) -> ModelResponse:
        """The response to the step's next model call: replayed, or sent and journaled.

        ``held``: its text is not streamed as it comes (guards judge it first; ``tell``).
        """
        self._model_calls += 1
        responses = self._replay.responses
        live = None if held else self._live
        if not (responses or self._journaled) and self._cut is None:  # nothing to do here
            return await caller.call(request, live)
        key = step_key(self._assign, self._model_calls)
        replayed = responses.get(key)
        if replayed is not None:
            self._replay.taken.add(key)  # charged through the step's report
            # No chat span (the model is not asked): the step's span says so.
            if caller.telemetry.traced:
                trace.get_current_span().add_event(sc.REPLAYED_EVENT, _CHAT)
            if (asked := self._replay.asked.get(key)) is not None and asked.failed is not None:
                raise raised_again(replayed, asked.calls, asked.failed)  # failed: it fails again
            return replayed
        intent = None
        if self._bounded and self._run is not None:  # billed even if no reply comes back
            most = most_spent(caller, request)
            intent = ModelCallStarted(
                run_id=self._run_id, call_key=key, role=self._worker, most=most
            )
            await self._run.append(intent, durable=True)
        try:
            response = await caller.call(request, live)
        except anyio.get_cancelled_exc_class():  # cut in flight: billed all the same
            if self._cut is not None:
                self._cut.charge(key, caller, request, intent)
            raise
        except ModelError as exc:  # a refused reply, a broken stream: billed all the same,
            await self._judged(key, *failure(exc))  # closing its intent (a resume raises it)
            raise
        if self._journaled and self._run is not None:
            record = ModelCallFinished(run_id=self._run_id, call_key=key, response=response)
            await self._run.append(record)
        return response

    def judge_tape(self) -> JudgeTape | None:
        """Where the step's guards' judge calls are journaled and replayed from (``None``:
        nothing records or replays them)."""
        if self._tape is None and (self._replay.responses or self._journaled):
            a = self._assign  # one tape a step: it numbers the step's questions
            prefix = f"step/{a.plan_version}/{a.step.id}/a{a.attempt}/"
            replay = self._replay
            self._tape = JudgeTape(
                prefix, replay.responses, self._judged, self._judging, replay.asked, replay.taken
            )
        return self._tape

    async def _judging(
        self, key: str, role: str, caller: ModelCaller, request: ModelRequest
    ) -> None:
        """A judge's call is about to be sent: its intent first (counted if cut by a crash)."""
        if self._journaled and self._run is not None:
            await journal_intent(self._run, key, self._worker, caller, request)

    async def _judged(
        self, key: str, response: ModelResponse, calls: int, failed: JsonObject | None
    ) -> None:
        """Journal a judge's reply (or failure), or a failed call of the step's own,
        durably: the call was paid for, whatever comes next."""
        if self._journaled and self._run is not None:
            record = ModelCallFinished(
                run_id=self._run_id, call_key=key, response=response, calls=calls, failed=failed
            )
            await self._run.append(record, durable=True)

    def tell(self, request: ModelRequest, response: ModelResponse) -> None:
        """Stream the text of a reply held back while guards judged it, in one piece."""
        if self._live is not None:
            self._live.tell(request, response.text)

    def unrun(self, call: ToolCallPart, outcome: str, took: float) -> None:
        """Stream a call that ended before its tool was reached (see ``told_unrun``)."""
        if self._live is not None:
            told_unrun(self._live, call, self._assign.step.id, outcome, took)

    def passed(self, index: int) -> tuple[JsonObject, tuple[GuardNote, ...]] | None:
        """The arguments tool call number ``index`` ran with before the run's resume (its
        intent is journaled: its guards had let it through, as they left it), if it did,
        and what its guards did to it then (their rewrites)."""
        intent = self._replay.intents.get((self._assign.plan_version, self._assign.step.id, index))
        if intent is None:
            return None
        return intent.arguments, tuple(msgspec.convert(n, GuardNote) for n in intent.guardrails)

    def noted(self, index: int, notes: list[GuardNote]) -> None:
        """What the guards of tool call number ``index`` did to it: journaled with its
        intent, so a resume that runs the call again unjudged still tells of it."""
        if notes and self._journaled:
            self._notes[index] = [msgspec.to_builtins(n) for n in notes]

    def replayed(self, index: int) -> bool:
        """Whether tool call number ``index`` of the step was the journaled one, replayed."""
        return (self._assign.plan_version, self._assign.step.id, index) in self._replay.results

    def reserve(self, calls: int) -> int:
        """Number the next ``calls`` tool calls; the first one's index."""
        first = self._tool_calls
        self._tool_calls += calls
        return first

    async def tool(
        self, toolset: Toolset, index: int, call: ToolCallPart, approver: Approver | None = None
    ) -> ToolResult:
        """Run tool call number ``index`` of the step, or replay its journaled result;
        ``approver`` decides a call that needs approval (see ``ApprovalGate``)."""
        assign, replay, run = self._assign, self._replay, self._run
        where = (assign.plan_version, assign.step.id, index)
        finished = replay.results.get(where)
        if finished is not None:
            replay.tools_taken.add(where)  # counted by the step's report
            return finished.result
        intent = replay.intents.get(where)
        found = toolset.get(call.name)
        if intent is None and not self._journaled and (found is None or not found.takes_context):
            # Nothing records the call and no body reads a context: no key, no context.
            if self._live is None:
                return await toolset.call(
                    call.name, call.arguments, call_id=call.id, approver=approver
                )
            return await observed_tool_call(
                toolset, call, live=self._live, step_id=assign.step.id, approver=approver
            )
        if intent is not None:  # in flight at the crash: again, with the same key
            replay.tools_taken.add(where)
            key, span = intent.idempotency_key, current_span_id(f"execute_tool {call.name}")
            if span is not None and self._journaled and run is not None:  # traced: a new span
                await run.append(msgspec.structs.replace(intent, span=span), durable=True)
        else:
            key = toolset.key_for(call.name, call.arguments) or derived_key(self._run_id, *where)
            if self._journaled and run is not None:
                await run.append(self._intent(index, call, key), durable=True)
        context = RunContext(
            run_id=self._run_id,
            step_id=assign.step.id,
            worker=self._worker,
            plan_version=assign.plan_version,
            call_id=call.id,
            idempotency_key=key,
            deps=self._deps,
        )
        if self._live is None:  # nobody streams the run: no live events to tell
            result = await toolset.call(
                call.name, call.arguments, call_id=call.id, context=context, approver=approver
            )
        else:
            result = await observed_tool_call(
                toolset,
                call,
                live=self._live,
                step_id=assign.step.id,
                context=context,
                approver=approver,
            )
        if self._journaled and run is not None:
            # Durable too: a result lost in a crash would run a finished call's body again.
            await run.append(self._done(index, result), durable=True)
        return result

    def _intent(self, index: int, call: ToolCallPart, key: str) -> ToolCallStarted:
        return ToolCallStarted(
            run_id=self._run_id,
            plan_version=self._assign.plan_version,
            step_id=self._assign.step.id,
            call_index=index,
            tool=call.name,
            call_id=call.id,
            arguments=dict(call.arguments),
            idempotency_key=key,
            guardrails=self._notes.pop(index, []) if self._notes else [],
            span=current_span_id(f"execute_tool {call.name}"),  # (traced: a resume ends it)
        )

    def _done(self, index: int, result: ToolResult) -> ToolCallFinished:
        return ToolCallFinished(
            run_id=self._run_id,
            plan_version=self._assign.plan_version,
            step_id=self._assign.step.id,
            call_index=index,
            result=result,
        )
