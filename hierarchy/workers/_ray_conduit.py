"""The caller's end of a Ray-placed step's two-way channel: :class:`StepConduit`.

The planner's process stays authoritative: what a replica's step records goes
to the run's journal here, through the run's :class:`RunCalls`, under the same
keys as an in-process worker's (``step/{version}/{step}/{n}`` for model calls,
(version, step, index) for tool calls), and a durable record is acked only
once it is durable, so a tool body never runs before its intent is journaled.
Model usage is charged to the step's progress as it arrives, so a step
cancelled mid-way still reports what its replica spent; a call whose replica
died before its reply came is charged to the run at its most (``replica_lost``).
Live events go to the run's reader; approval asks go to the team's approval gate;
a top-up ask goes to the run's ``TopUps`` (its fence's), as an in-process step's does.

The conduit also remembers what the step journaled, so a retry on another
replica (after ``WorkerLost``) replays the committed calls instead of running
them again, even without a journal.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, Awaitable, Callable
from typing import assert_never, final

import anyio
import anyio.lowlevel
import msgspec
from anyio.abc import TaskGroup

from regiment.hierarchy._in_flight import charge_lost, step_cut
from regiment.hierarchy._live_events import LiveSink
from regiment.hierarchy._messages import AssignStep, StepReport
from regiment.hierarchy._replay import Replay, ToolKey
from regiment.hierarchy.workers._approval_gate import Approvals
from regiment.hierarchy.workers._journal_calls import RunCalls
from regiment.hierarchy.workers._loop import StepProgress
from regiment.hierarchy.workers._ray_logs import log_again, wanted_levels
from regiment.hierarchy.workers._wire import (
    ApprovalAsked,
    CallRecorded,
    LiveEvent,
    LogRecorded,
    RemoteStep,
    StepDone,
    StepMessage,
    StepReplay,
    TopUpAsked,
    decode_messages,
    encode,
)
from regiment.journal import ModelCallFinished, ModelCallStarted
from regiment.journal import ToolCallFinished as ToolResultRecord
from regiment.journal import ToolCallStarted as ToolIntentRecord
from regiment.models import ModelResponse
from regiment.tools import ApprovalDecision, Deny, Toolset, ask_approver

__all__ = ("Ack", "StepConduit")

Ack = Callable[[int, bytes], Awaitable[object]]
"""Answers message ``seq`` of the step on its replica."""


@final
class StepConduit:
    """One step's channel, on the caller's side.

    Args:
        assign: the step.
        toolset: the worker's tools as the team's process knows them (for approvals).
        progress: the step's progress: usage and call counts as they arrive.
        run: the run's calls (its journal, replay and deps); ``None``: it has ended.
        live: the run's live sink, when it is streamed.
        approvals: the team's approval gate for this worker.
        deps: the run's deps, pickled for the replica.
    """

    def __init__(
        self,
        assign: AssignStep,
        toolset: Toolset,
        progress: StepProgress,
        run: RunCalls | None = None,
        live: LiveSink | None = None,
        approvals: Approvals | None = None,
        deps: bytes | None = None,
        *,
        worker: str = "",
        catch_up: Callable[[int], Awaitable[Toolset]] | None = None,
    ) -> None:
        self.worker = worker  # the worker the step is for (a pool's replica hosts several)
        self.replica = -1  # the replica the step runs on (set as it is sent there)
        self._catch_up = catch_up  # the tools once that replica's MCP lists are caught up
        self._assign = assign
        self._toolset = toolset
        self._progress = progress
        self._run = run
        self._live = live
        self._approvals = approvals
        self._deps = deps
        self.tools_version = 0  # the replica's MCP tool lists' version, as the step ended
        self._responses: dict[str, ModelResponse] = {}
        self._asked: dict[str, ModelCallFinished] = {}  # of those, the failed calls'
        self._intents: dict[ToolKey, ToolIntentRecord] = {}
        self._results: dict[ToolKey, ToolResultRecord] = {}
        # Model calls the replica started (under a spending budget) with no reply yet.
        self._started: dict[str, ModelCallStarted] = {}
        # The run's ledger, held from the step's start (as an in-process step's StepCut
        # holds it): the run lets go of it as its budget runs out, before the steps it
        # cuts then have ended, and those steps' calls in flight are charged to it.
        fence = progress.fence
        self._ledger = None if fence is None else fence.top_ups.ledger
        # Calls decided to run whose result has not come back: their bodies work on the
        # replica, so the step is not just waiting (see _progress.StepProgress.calls_working).
        self._working: set[int] = set()
        if run is not None and not run.replay.empty:
            journaled = _journaled(assign, run.replay)
            self._responses, self._asked, self._intents, self._results = journaled

    def payload(self, key: str, headers: dict[str, str]) -> bytes:
        """The step for a replica, with everything journaled for it so far."""
        replay = StepReplay(
            responses=self._responses,
            asked=self._asked,
            intents=list(self._intents.values()),
            results=list(self._results.values()),
        )
        assign = self._assign
        if (grown := self._progress.allowance) is not None:  # topped up on a lost replica
            assign = msgspec.structs.replace(assign, allowance=grown)
        step = RemoteStep(
            assign=assign,
            headers=headers,
            key=key,
            worker=self.worker,
            replay=replay,
            deps=self._deps,
            live=self._live is not None,
            journal=self._run is not None and self._run.journaled,
            # a budget on model calls: their intents are told (one cut or lost is counted)
            holds_calls=self._ledger is not None and self._ledger.budget.model_calls is not None,
            log_levels=wanted_levels(),
        )
        return encode(step)

    async def drain(self, messages: AsyncIterable[Awaitable[bytes]], ack: Ack) -> StepReport | None:
        """Take the step's messages until its report (``None``: the stream ended without one).

        Raises:
            JournalError: a record could not be journaled (the remote step must stop).
            Exception: what an approver or Ray raised.
        """
        failures: list[Exception] = []
        report: StepReport | None = None
        try:
            async with anyio.create_task_group() as tg:
                try:
                    async for item in messages:
                        for message in decode_messages(await item):
                            report = await self._take(message, ack, failures, tg) or report
                        if report is not None:
                            break
                except Exception as exc:  # not grouped: the caller translates Ray's errors
                    failures.append(exc)
                tg.cancel_scope.cancel()  # approval waits of a step that has ended
        finally:  # the step has ended on its replica (or is given up): no call works
            self._progress.calls_working -= len(self._working)
            self._working.clear()
        if failures:
            raise failures[0]
        return report

    async def _take(
        self, message: StepMessage, ack: Ack, failures: list[Exception], tg: TaskGroup
    ) -> StepReport | None:
        match message:
            case StepDone(report=report, tools_version=version):
                self.tools_version = version
                if self._run is not None and self._responses:  # its report counts those it
                    replay = self._run.replay  # replayed (on the replica): not again
                    replay.taken.update(message.replayed)
                    replay.tools_taken.update(message.tools_replayed)
                return report
            case CallRecorded():
                await self._recorded(message, ack)
            case LiveEvent(event=event):
                if self._live is not None:
                    self._live.emit(event)
            case ApprovalAsked():
                tg.start_soon(self._decide, message, ack, failures, tg.cancel_scope)
            case TopUpAsked(seq=seq, need=need):  # it may wait for a sibling to give back
                tg.start_soon(self._top_up, seq, need, ack)
            case LogRecorded():
                log_again(message, self._assign, self.worker, self.replica)
            case _:
                assert_never(message)
        return None

    async def _recorded(self, recorded: CallRecorded, ack: Ack) -> None:
        record, progress = recorded.record, self._progress
        if type(record) is ToolIntentRecord and progress.fenced(record.plan_version):
            # Cut, or its plan fenced (a replan, the run's end), as its replica asked to
            # start a tool, which waits for this ack: it is never given; the step's cut
            # (on its way, if its worker is busy) sends the cancel to the replica.
            await anyio.lowlevel.checkpoint_if_cancelled()
            await anyio.sleep_forever()
        if self._run is not None:
            await self._run.append(record, durable=recorded.seq > 0)
        match record:
            case ModelCallStarted(call_key=key):
                self._started[key] = record
            case ModelCallFinished(call_key=key, response=response):
                self._started.pop(key, None)
                self._responses[key] = response
                if record.failed is not None:  # a retry raises its error again, not asks
                    self._asked[key] = record
                progress.usage = progress.usage + response.usage  # charged even if cancelled
                progress.model_calls += record.calls
            case ToolIntentRecord():
                self._intents[(record.plan_version, record.step_id, record.call_index)] = record
                progress.tool_calls += 1
            case ToolResultRecord():
                self._results[(record.plan_version, record.step_id, record.call_index)] = record
        if recorded.seq:
            await ack(recorded.seq, b"")
        if type(record) is ToolResultRecord and record.call_index in self._working:
            await self._stopped_working(record.call_index)

    def replica_lost(self) -> None:
        """The step's replica died: the model calls it had in flight are charged to the
        run at their most (``charge_lost``), and a retry may spend that much less."""
        if not self._started:
            return
        lost, self._started = list(self._started.values()), {}
        progress, ledger = self._progress, self._ledger
        a = self._assign
        where = f"run {a.run_id}: worker '{self.worker}', step {a.step.id}"
        allowance = a.allowance if progress.allowance is None else progress.allowance
        progress.allowance = charge_lost(
            None if ledger is None else ledger.spent, lost, allowance, where
        )

    def step_cut(self) -> None:
        """The step was cut (a replan, the run's cancel, its timeout) while its replica's
        model calls were in flight: each is charged to the run at its most, as an
        in-process step's cut call is (``StepCut``), once (they are in flight no more)."""
        if not self._started:
            return
        cut, self._started = list(self._started.values()), {}
        ledger = self._ledger
        charges = None if ledger is None else step_cut(ledger, self._assign, self.worker)
        if charges is not None:
            for started in cut:
                charges.charge_started(started)

    async def _top_up(self, seq: int, need: dict[str, tuple[int, int]], ack: Ack) -> None:
        """Top the step's share up from its run, under the run's rule (as
        ``_share._topped_up`` does in-process, waiting as it does): tell the replica
        its allowance now, or empty."""
        await ack(seq, await self._grown(need))

    async def _grown(self, need: dict[str, tuple[int, int]]) -> bytes:
        assign, progress = self._assign, self._progress
        fence = progress.fence
        if fence is None or progress.fenced(assign.plan_version):
            return b""  # no run to ask (it has ended), or the step's plan is over
        key = (assign.plan_version, assign.step.id, assign.attempt)
        if (grown := await fence.top_ups.grant_waiting(key, need)) is None:
            return b""
        progress.allowance = grown  # a retry on another replica is sent with it
        return encode(grown)

    async def _stopped_working(self, call_index: int) -> None:
        """A decided call's body is done on the replica: as an in-process step's calls
        do, if only waits for decisions are left in the step, its run looks again."""
        self._working.discard(call_index)
        progress = self._progress
        progress.calls_working -= 1
        if not progress.working() and progress.recheck is not None:
            await progress.recheck()

    async def _decide(
        self, asked: ApprovalAsked, ack: Ack, failures: list[Exception], scope: anyio.CancelScope
    ) -> None:
        try:
            decision = await self._decision(asked)
            if not isinstance(decision, Deny):
                # Counted before the replica hears of it (and before the desk's count of
                # the call being woken has gone): a pause must not cut its body halfway.
                self._working.add(asked.call_index)
                self._progress.calls_working += 1
            await ack(asked.seq, encode(decision))
        except Exception as exc:  # the approver's (application code) or Ray's: the step fails
            failures.append(exc)
            scope.cancel()

    async def _decision(self, asked: ApprovalAsked) -> ApprovalDecision:
        tool = asked.request.tool_name
        if self._toolset.get(tool) is None and self._catch_up is not None and self.replica >= 0:
            # A tool the replica's MCP servers added since this step began here.
            self._toolset = await self._catch_up(self.replica)
        approvals = self._approvals
        approver = (
            None
            if approvals is None
            else approvals.approver(
                self._toolset, self._assign, asked.call_index, tool, self._progress
            )
        )
        if approver is None:
            return Deny(reason=_not_here(tool, self._toolset))
        return await ask_approver(approver, asked.request)


def _not_here(tool: str, toolset: Toolset) -> str:
    """Why a call the replica asks approval for is denied in the team's process."""
    if toolset.get(tool) is None:
        return (
            f"tool '{tool}' needs approval on the Ray replica, but the team's process does "
            f"not know it, nor did the replica's MCP servers list it when asked (the tools "
            f"known here: {', '.join(toolset.names) or '(none)'}); build the worker the "
            "same way in both (Ray(build=...))"
        )
    return (
        f"tool '{tool}' needs approval on the Ray replica but not in the team's process; "
        "build the worker the same way in both (Ray(build=...))"
    )


def _journaled(
    assign: AssignStep, replay: Replay
) -> tuple[
    dict[str, ModelResponse],
    dict[str, ModelCallFinished],
    dict[ToolKey, ToolIntentRecord],
    dict[ToolKey, ToolResultRecord],
]:
    """What a resumed run's journal holds for the step ``assign``: its model responses,
    the records of those that failed, its tool intents and its tool results."""
    version, step_id = assign.plan_version, assign.step.id
    prefix = f"step/{version}/{step_id}/"
    return (
        {k: r for k, r in replay.responses.items() if k.startswith(prefix)},
        {k: r for k, r in replay.asked.items() if k.startswith(prefix)},
        {k: r for k, r in replay.intents.items() if k[:2] == (version, step_id)},
        {k: r for k, r in replay.results.items() if k[:2] == (version, step_id)},
    )
