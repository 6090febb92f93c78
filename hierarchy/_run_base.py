"""The run actor's foundation: its state, planner-side model calls, and how a run ends.

Planner-side model calls (plan, replan, round, critique, compress, synthesis)
run as tasks the actor owns, each in a cancel scope and inside its phase's span,
and come back as ``ModelReplied`` messages, so the handler never waits on a model.
Every planner span hangs off the run span explicitly (not the ambient context,
which in a handler is whichever message came in last).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Literal, assert_never

import anyio
import msgspec
from opentelemetry.trace import Span

from regiment.actors import Actor, ActorRef
from regiment.errors import (
    ActorStopped,
    BudgetExceeded,
    MailboxFull,
    RunCancelled,
    RunError,
)
from regiment.hierarchy._budget import Budget, BudgetLedger, BudgetLimit
from regiment.hierarchy._checks import Check
from regiment.hierarchy._critic import Critic
from regiment.hierarchy._events import (
    BudgetExhausted,
    Event,
    SynthesisStarted,
)
from regiment.hierarchy._memory import Compression
from regiment.hierarchy._messages import (
    CancelStep,
    StepReport,
    WorkerMessage,
)
from regiment.hierarchy._model_call import ModelCaller
from regiment.hierarchy._planner import Planner, PlanningSession
from regiment.hierarchy._run_messages import (
    CancelRun,
    DeadlineReached,
    ModelReplied,
    PlannerMessage,
    Purpose,
)
from regiment.hierarchy._run_state import RunChannel, RunState
from regiment.hierarchy._worker import WorkerSpec
from regiment.models import Message, ModelRequest, Role, estimate_tokens
from regiment.telemetry import (
    Telemetry,
    headers_for,
    record_replan,
    trace_id_hex,
)

__all__ = ("Phase", "RunBase", "TeamRuntime")

Phase = Literal[
    "planning", "executing", "replanning", "critiquing", "synthesizing", "winding_down", "done"
]


@dataclass(frozen=True, kw_only=True)
class TeamRuntime:
    """What every run of a started team shares."""

    name: str
    planner: Planner
    workers: Mapping[str, WorkerSpec]
    worker_refs: Mapping[str, ActorRef[WorkerMessage, None]]
    checks: Mapping[str, Check]
    budget: Budget
    concurrency: int
    critic: Critic | None
    compression: Compression | None
    telemetry: Telemetry


class RunBase(Actor[PlannerMessage, None]):
    """State, model calls, synthesis and endings shared by the run actor's layers."""

    def __init__(
        self, team: TeamRuntime, run_id: str, goal: str, channel: RunChannel, run_span: Span
    ) -> None:
        self._team = team
        self._channel = channel
        self._state = RunState(run_id=run_id, goal=goal, ledger=BudgetLedger(team.budget))
        self._state.trace_id = trace_id_hex(run_span)
        # Every span of the run's planner hangs off the run span explicitly: the
        # ambient context of a handler is whichever message came in last.
        self._run_span = run_span
        self._run_headers = headers_for(run_span)
        self._phase: Phase = "planning"
        self._session: PlanningSession | None = None
        self._replan_reason = ""
        self._model_scope: anyio.CancelScope | None = None
        self._deadline_scope: anyio.CancelScope | None = None  # while a wall-clock deadline runs
        self._token = 0
        self._after_wind_down: Callable[[], None] | None = None
        self._planner_caller = ModelCaller(team.planner.model, team.planner.name, team.telemetry)
        synth_model = team.planner.synthesizer_model or team.planner.model
        self._synth_caller = ModelCaller(synth_model, "synthesizer", team.telemetry)

    async def on_stop(self) -> None:
        if not self._channel.done:  # the team is stopping under a live run
            self._state.fail(
                self._channel,
                RunCancelled(
                    "the run's planner stopped before the run finished (the team stopped)"
                ),
            )

    def _emit(self, event: Event) -> None:
        self._state.events.append(event)
        self._channel.emit(event)

    def _call_model(self, purpose: Purpose, caller: ModelCaller, request: ModelRequest) -> None:
        # A call whose estimated input does not fit in the tokens left never starts.
        needed = estimate_tokens(request)
        if (limit := self._state.ledger.exhausted(tokens_needed=needed)) is not None:
            self._on_exhausted(limit, f"no budget left for the {purpose} model call")
            return
        self._token += 1
        scope = anyio.CancelScope()
        self._model_scope = scope
        request = msgspec.structs.replace(request, role=REQUEST_ROLES[purpose])
        self.ctx.start_soon(self._model_task, purpose, caller, request, self._token, scope)

    async def _model_task(
        self,
        purpose: Purpose,
        caller: ModelCaller,
        request: ModelRequest,
        token: int,
        scope: anyio.CancelScope,
    ) -> None:
        with scope:
            with self._in_run(), self._phase_span(purpose) as span:
                if purpose == "replan":
                    record_replan(span, new_version=self._state.version + 1)
                try:
                    reply = ModelReplied(purpose, token, await caller.call(request))
                except Exception as exc:  # any failure of the model ends the run with it
                    reply = ModelReplied(purpose, token, None, exc)
            await self.ctx.self_ref.send(reply)

    def _in_run(self) -> AbstractContextManager[None]:
        if not self._run_headers:  # not tracing: there is no run span to hang spans off
            return contextlib.nullcontext()
        return self._team.telemetry.propagator.activate(self._run_headers)

    def _phase_span(self, purpose: Purpose) -> AbstractContextManager[Span]:
        telemetry, state = self._team.telemetry, self._state
        match purpose:
            case "plan":
                return telemetry.plan_span(self._team.planner.name, plan_version=1)
            case "replan":
                return telemetry.replan_span(old_version=state.version, reason=self._replan_reason)
            case "round":
                return telemetry.plan_span(
                    self._team.planner.name,
                    plan_version=state.version + 1,
                    attributes={"regiment.round": state.round},
                )
            case "critique":
                return telemetry.phase_span("critique", attributes={"regiment.round": state.round})
            case "compress":
                return telemetry.phase_span("compress")
            case "synthesis":
                return telemetry.phase_span("synthesize")
            case _:
                assert_never(purpose)

    def _start_deadline(self, seconds: float) -> None:
        self._deadline_scope = anyio.CancelScope()
        self.ctx.start_soon(self._deadline, seconds, self._deadline_scope)

    async def _deadline(self, seconds: float, scope: anyio.CancelScope) -> None:
        with scope:
            await anyio.sleep(seconds)
            await self.ctx.self_ref.send(DeadlineReached())

    def _cancel_inflight(self, reason: str) -> None:
        state = self._state
        for worker in set(state.inflight.values()):
            message = CancelStep(run_id=state.run_id, reason=reason)
            ref = self._team.worker_refs[worker]
            try:
                ref.send_nowait(message)
            except MailboxFull:  # never block the planner on a busy worker's mailbox
                self.ctx.start_soon(_send_quietly, ref, message)
            except ActorStopped:
                pass  # the team is stopping; the worker's steps stop with it

    def _synthesize(self) -> None:
        state, prompts = self._state, self._team.planner.prompts
        self._phase = "synthesizing"
        self._emit(SynthesisStarted(run_id=state.run_id, committed_steps=tuple(state.committed)))
        text = prompts.synthesis_request(
            goal=state.goal, committed=state.committed_text(), artifacts=state.artifacts
        )
        request = ModelRequest(
            system=prompts.synthesizer_system(team=self._team.name),
            messages=(Message.user(text),),
        )
        self._call_model("synthesis", self._synth_caller, request)

    # -- endings ------------------------------------------------------------

    def _finish_with_answer(self, text: str) -> None:
        answer = "\n\n".join([text.strip(), *self._state.artifacts]).strip()
        status: Literal["completed", "partial"] = (
            "partial" if self._state.exhausted else "completed"
        )
        self._end()
        self._state.finish(self._channel, answer, status)

    def _end(self) -> None:
        self._phase = "done"
        # Only scopes in use are cancelled: anyio's cancel() formats a task repr.
        if self._deadline_scope is not None:
            self._deadline_scope.cancel()
        if self._model_scope is not None:
            self._model_scope.cancel()

    def _fail(self, error: RunError) -> None:
        self._cancel_inflight("the run failed")
        self._end()
        self._state.fail(self._channel, error)

    def _wind_down(self, then: Callable[[], None]) -> None:
        """Cancel everything in flight; run ``then`` once every step has reported."""
        if self._model_scope is not None:
            self._model_scope.cancel()
            self._model_scope = None
        self._token += 1
        self._phase = "winding_down"
        self._cancel_inflight("the run is ending")
        if self._state.inflight:
            self._after_wind_down = then
        else:
            then()

    def _on_cancel(self, cancel: CancelRun) -> None:
        if self._phase == "done":
            return
        self._wind_down(lambda: self._finish_cancelled(cancel.reason))

    def _finish_cancelled(self, reason: str) -> None:
        self._end()
        self._state.finish(self._channel, f"cancelled: {reason}", "cancelled")

    def _on_exhausted(self, limit: BudgetLimit, detail: str) -> None:
        state = self._state
        if self._phase in ("done", "winding_down") or state.exhausted:
            return
        state.exhausted = limit
        self._emit(BudgetExhausted(run_id=state.run_id, limit=limit, detail=detail))
        if self._team.budget.on_exhausted == "raise":
            self._wind_down(
                lambda: self._fail(BudgetExceeded(f"budget exhausted: {detail}", limit=limit))
            )
        else:
            self._wind_down(self._finish_partial)

    def _refusals_end_run(self, report: StepReport) -> bool:
        """Tool calls of this step were refused: the run ends ``partial`` (reason
        ``tool_calls``) when its tool-call budget is truly spent; otherwise only
        the step's share was, and the run goes on with a ``BudgetExhausted`` note."""
        state = self._state
        state.refused_tool_calls += report.refused_tool_calls
        if self._refused_and_spent():
            return True
        detail = (
            f"step {report.step_id}: {report.refused_tool_calls} tool call(s) refused, "
            "its share of the tool-call budget was used up"
        )
        self._emit(
            BudgetExhausted(
                run_id=state.run_id, limit="tool_calls", detail=detail, step_id=report.step_id
            )
        )
        return False

    def _refused_and_spent(self) -> bool:
        """End the run ``partial`` if tool calls were refused and the run's are all
        spent (checked on each report and when the plan is done, so the outcome does
        not depend on the order the reports came in)."""
        state, limit = self._state, self._team.budget.tool_calls
        if not state.refused_tool_calls or limit is None or state.ledger.spent.tool_calls < limit:
            return False
        self._on_exhausted(
            "tool_calls",
            f"{state.refused_tool_calls} tool call(s) were refused "
            f"and the run's {limit} tool calls are all spent",
        )
        return True

    def _finish_partial(self) -> None:
        state = self._state
        committed = [
            f"{sid}: {r.output}" for sid, r in state.committed.items() if r.status == "done"
        ]
        answer = (
            "Partial result (budget exhausted: "
            + (state.exhausted or "")
            + ").\n"
            + "\n".join(committed)
        )
        self._end()
        state.finish(self._channel, "\n\n".join([answer, *state.artifacts]), "partial")


async def _send_quietly(ref: ActorRef[WorkerMessage, None], message: WorkerMessage) -> None:
    with contextlib.suppress(ActorStopped):
        await ref.send(message)


ROLES: dict[Purpose, str] = {
    "plan": "planner",
    "replan": "planner",
    "round": "planner",
    "critique": "critic",
    "compress": "compressor",
    "synthesis": "synthesizer",
}


# The role a model call is made in, as ModelRequest.role tells the model (a brain).
REQUEST_ROLES: dict[Purpose, Role] = {
    "plan": "planner",
    "replan": "replanner",
    "round": "replanner",
    "critique": "critic",
    "compress": "compressor",
    "synthesis": "synthesizer",
}


def model_failure(reply: ModelReplied) -> RunError:
    error = RunError(
        f"the {reply.purpose} model call failed: {type(reply.error).__name__}: {reply.error}"
    )
    error.__cause__ = reply.error
    return error
