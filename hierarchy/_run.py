"""The planner actor of one run.

It receives, decides and sends; it never waits on a model inside its handler.
Planner-side model calls (plan, replan, synthesis) run as tasks the actor owns,
in a cancel scope, and come back as ``ModelReplied`` messages, so a
``CancelRun`` or a stale report is handled at once even while the planner
model is thinking.

Plan versions: a replan bumps the current version *when it starts*, so every
report of the old version that arrives afterwards (a slow step still in flight)
is dropped, counted and recorded, never committed.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Literal, assert_never

import anyio
from opentelemetry.trace import Span

from regiment.actors import Actor, ActorRef
from regiment.errors import (
    ActorStopped,
    BudgetExceeded,
    MailboxFull,
    PlanError,
    RunCancelled,
    RunError,
    StepFailed,
)
from regiment.hierarchy._budget import Budget, BudgetLedger
from regiment.hierarchy._checks import Check
from regiment.hierarchy._critic import Critic
from regiment.hierarchy._events import (
    BudgetExhausted,
    CheckFailed,
    CritiqueCompleted,
    Event,
    PlanCreated,
    Replanned,
    RoundStarted,
    RunStarted,
    StaleReportDropped,
    StepCompleted,
    StepDispatched,
    StepErrored,
    SynthesisStarted,
)
from regiment.hierarchy._memory import Compression
from regiment.hierarchy._messages import (
    AssignStep,
    CancelStep,
    StepContext,
    StepReport,
    WorkerMessage,
)
from regiment.hierarchy._model_call import ModelCaller
from regiment.hierarchy._plan import Plan
from regiment.hierarchy._planner import Planner, PlanningSession
from regiment.hierarchy._rounds import (
    CritiqueSession,
    apply_compression,
    compress_request,
    compression_due,
)
from regiment.hierarchy._run_messages import (
    CancelRun,
    DeadlineReached,
    ModelReplied,
    PlannerMessage,
    Purpose,
    StartRun,
)
from regiment.hierarchy._run_state import RunChannel, RunState
from regiment.hierarchy._worker import WorkerSpec
from regiment.models import Message, ModelRequest, ModelResponse
from regiment.telemetry import (
    Telemetry,
    headers_for,
    record_check,
    record_replan,
    record_stale_report,
    trace_id_hex,
)

__all__ = ("RunActor", "TeamRuntime")

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


class RunActor(Actor[PlannerMessage, None]):
    """Drives one run from goal to answer."""

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
        self._deadline_scope = anyio.CancelScope()
        self._token = 0
        self._after_wind_down: Callable[[], None] | None = None
        self._planner_caller = ModelCaller(team.planner.model, team.planner.name, team.telemetry)
        synth_model = team.planner.synthesizer_model or team.planner.model
        self._synth_caller = ModelCaller(synth_model, "synthesizer", team.telemetry)
        planner_model = team.planner.model
        critic_model = (team.critic.model if team.critic else None) or planner_model
        self._critic_caller = ModelCaller(critic_model, "critic", team.telemetry)
        compressor = (team.compression.model if team.compression else None) or planner_model
        self._compress_caller = ModelCaller(compressor, "compressor", team.telemetry)
        self._critique: CritiqueSession | None = None
        self._after_compress: Callable[[], None] | None = None
        self._compress_before = 0
        self._round_added = 0

    # -- the handler ---------------------------------------------------------

    async def on_stop(self) -> None:
        if not self._channel.done:  # the team is stopping under a live run
            self._state.fail(
                self._channel,
                RunCancelled(
                    "the run's planner stopped before the run finished (the team stopped)"
                ),
            )

    async def receive(self, message: PlannerMessage) -> None:
        match message:
            case StartRun():
                self._start()
            case ModelReplied():
                await self._on_model_reply(message)
            case StepReport():
                await self._on_report(message)
            case CancelRun():
                self._on_cancel(message)
            case DeadlineReached():
                self._on_exhausted("wall_clock", "the run's wall-clock budget ran out")
            case _:
                assert_never(message)

    # -- phases -------------------------------------------------------------

    def _emit(self, event: Event) -> None:
        self._state.events.append(event)
        self._channel.emit(event)

    def _start(self) -> None:
        state, team = self._state, self._team
        self._emit(RunStarted(run_id=state.run_id, goal=state.goal, team=team.name))
        if team.budget.wall_clock is not None:
            self.ctx.start_soon(self._deadline, team.budget.wall_clock)
        prompts = team.planner.prompts
        system = prompts.planner_system(
            team=team.name,
            workers={n: (w.description, w.capabilities) for n, w in team.workers.items()},
            checks={n: c.description for n, c in team.checks.items()},
            max_steps=team.planner.max_steps,
        )
        self._session = PlanningSession(
            system=system,
            messages=[Message.user(prompts.plan_request(state.goal))],
            max_steps=team.planner.max_steps,
            start_index=1,
            workers=team.workers,
            checks=team.checks,
        )
        self._call_model("plan", self._planner_caller, self._session.request())

    def _call_model(self, purpose: Purpose, caller: ModelCaller, request: ModelRequest) -> None:
        if (limit := self._state.ledger.exhausted()) is not None:
            self._on_exhausted(limit, f"no budget left for the {purpose} model call")
            return
        self._token += 1
        scope = anyio.CancelScope()
        self._model_scope = scope
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

    async def _deadline(self, seconds: float) -> None:
        with self._deadline_scope:
            await anyio.sleep(seconds)
            await self.ctx.self_ref.send(DeadlineReached())

    async def _on_model_reply(self, reply: ModelReplied) -> None:
        if reply.token != self._token or self._phase in ("winding_down", "done"):
            return  # superseded or cancelled
        self._model_scope = None
        if reply.error is not None or reply.response is None:
            self._fail(reply.error if isinstance(reply.error, RunError) else _model_failure(reply))
            return
        response = reply.response
        self._state.charge(_ROLES[reply.purpose], response.usage, model_calls=1)
        match reply.purpose:
            case "synthesis":
                self._finish_with_answer(response.text)
            case "critique":
                self._on_critique(response.text)
            case "compress":
                self._on_compressed(response.text)
            case "plan" | "replan" | "round":
                await self._on_plan_reply(reply.purpose, response)
            case _:
                assert_never(reply.purpose)

    async def _on_plan_reply(self, purpose: Purpose, response: ModelResponse) -> None:
        session, state, prompts = self._session, self._state, self._team.planner.prompts
        assert session is not None
        attempt = session.evaluate(response.text)
        if attempt.problems:
            if session.attempts >= self._team.planner.max_plan_attempts:
                self._fail(
                    PlanError(
                        f"the planner gave no valid plan in {session.attempts} attempts: "
                        + "; ".join(attempt.problems),
                        last_reply=attempt.reply,
                        problems=attempt.problems,
                    )
                )
                return
            session.reprompt(attempt.problems, prompts)
            self._call_model(purpose, self._planner_caller, session.request())
            return
        parsed = attempt.parsed
        if purpose == "round":
            self._round_added = len(parsed.steps)
            old = state.plan
            plan = old.with_tail(
                keep=tuple(state.committed), new_steps=parsed.steps, reason=self._replan_reason
            )
            state.plans.append(plan)
            self._emit(PlanCreated(run_id=state.run_id, plan=plan))
        elif purpose == "plan":
            plan = Plan(
                version=1,
                steps=parsed.steps,
                reason="initial",
                truncated_from=parsed.truncated_from,
            )
            state.plans.append(plan)
            self._emit(PlanCreated(run_id=state.run_id, plan=plan))
        else:
            old = state.plan
            plan = old.with_tail(
                keep=tuple(state.committed), new_steps=parsed.steps, reason=self._replan_reason
            )
            state.plans.append(plan)
            kept = set(state.committed)
            self._emit(
                Replanned(
                    run_id=state.run_id,
                    old_version=old.version,
                    new_version=plan.version,
                    reason=self._replan_reason,
                    kept=tuple(state.committed),
                    removed=tuple(s for s in old.steps if s.id not in kept),
                    added=parsed.steps,
                )
            )
            self._emit(PlanCreated(run_id=state.run_id, plan=plan))
        self._phase = "executing"
        await self._dispatch_ready()

    async def _dispatch_ready(self) -> None:
        state, team = self._state, self._team
        if self._phase != "executing":
            return
        plan = state.plan
        running = state.running_ids(plan.version)
        ready = plan.ready(tuple(state.committed), running)[
            : max(0, team.concurrency - len(running))
        ]
        for step in ready:
            worker = team.workers[step.worker or next(iter(team.workers))]
            key = f"{plan.version}/{step.id}/1"
            allowance = state.ledger.reserve(
                key, ways=len(ready), model_calls_cap=worker.step_model_calls, keep_model_calls=1
            )
            if allowance is None:
                if not state.inflight:
                    self._on_exhausted(
                        state.ledger.exhausted(model_calls_needed=2) or "model_calls",
                        f"no budget left to dispatch step {step.id}",
                    )
                return
            context = StepContext(
                goal=state.goal,
                plan_outline=plan.outline(),
                dependency_outputs=tuple((d, state.committed[d].output) for d in step.depends_on),
            )
            state.inflight[(plan.version, step.id, 1)] = worker.name
            assign = AssignStep(
                run_id=state.run_id,
                plan_version=plan.version,
                step=step,
                context=context,
                attempt=1,
                allowance=allowance,
            )
            self._emit(
                StepDispatched(
                    run_id=state.run_id,
                    plan_version=plan.version,
                    step_id=step.id,
                    worker=worker.name,
                    attempt=1,
                )
            )
            await team.worker_refs[worker.name].send(assign, headers=self._run_headers)
        # Steps of older versions still winding down (cancelled, but maybe stuck in
        # a call that ignores cancellation) do not hold up the current plan.
        if not state.running_ids(plan.version) and all(s.id in state.committed for s in plan.steps):
            self._plan_done()

    async def _on_report(self, report: StepReport) -> None:
        state = self._state
        key = (report.plan_version, report.step_id, report.attempt)
        state.inflight.pop(key, None)
        state.ledger.release(f"{report.plan_version}/{report.step_id}/{report.attempt}")
        state.charge(
            report.worker,
            report.usage,
            model_calls=report.model_calls,
            tool_calls=report.tool_calls,
        )
        if report.plan_version != state.version or self._phase in (
            "replanning",
            "winding_down",
            "done",
        ):
            self._drop_stale(report)
        else:
            await self._apply(report)
        if (
            self._phase == "winding_down"
            and not state.inflight
            and self._after_wind_down is not None
        ):
            then, self._after_wind_down = self._after_wind_down, None
            then()

    def _drop_stale(self, report: StepReport) -> None:
        state = self._state
        if report.plan_version == state.version and self._phase != "replanning":
            return  # a step of the current version cancelled while the run winds down
        state.stale_dropped += 1
        current = state.version + (1 if self._phase == "replanning" else 0)
        record_stale_report(
            self._run_span,
            step_id=report.step_id,
            report_version=report.plan_version,
            current_version=current,
        )
        self._emit(
            StaleReportDropped(
                run_id=state.run_id,
                report_version=report.plan_version,
                current_version=current,
                step_id=report.step_id,
                status=report.status,
            )
        )

    async def _apply(self, report: StepReport) -> None:
        state = self._state
        state.reports.append(report)
        step = state.plan.step(report.step_id)
        if report.status == "budget_exhausted":
            self._on_exhausted(
                "step_allowance", f"step {step.id} used up its share of the budget: {report.error}"
            )
            return
        if report.status != "done":
            self._emit(
                StepErrored(
                    run_id=state.run_id,
                    plan_version=report.plan_version,
                    step_id=step.id,
                    worker=report.worker,
                    status=report.status,
                    error=report.error or "",
                )
            )
            self._replan_or_fail(
                report,
                f"step {step.id} ({step.description}) ended {report.status}: {report.error or 'no detail'}",
            )
            return
        if step.check is not None:
            with (
                self._in_run(),
                self._team.telemetry.verify_span(
                    step.id, check=step.check, plan_version=report.plan_version
                ) as span,
            ):
                outcome = self._team.checks[step.check].run(report)
                record_check(span, passed=outcome.passed, detail=outcome.reason)
            if not outcome.passed:
                self._emit(
                    CheckFailed(
                        run_id=state.run_id,
                        plan_version=report.plan_version,
                        step_id=step.id,
                        check=step.check,
                        reason=outcome.reason,
                    )
                )
                state.committed[step.id] = report  # kept as evidence for the replan
                self._replan_or_fail(
                    report, f"step {step.id} failed its check '{step.check}': {outcome.reason}"
                )
                return
        state.committed[step.id] = report
        if self._team.workers[report.worker].artifact:
            state.artifacts.append(report.output)
        self._emit(
            StepCompleted(
                run_id=state.run_id,
                plan_version=report.plan_version,
                step_id=step.id,
                worker=report.worker,
                output=report.output,
            )
        )
        await self._dispatch_ready()

    def _replan_or_fail(self, report: StepReport, reason: str) -> None:
        state, team = self._state, self._team
        if not state.ledger.can_replan():
            self._fail(
                StepFailed(
                    f"{reason}; no replans left (budget allows {team.budget.replans})",
                    step_id=report.step_id,
                    worker=report.worker,
                    cause=reason,
                )
            )
            return
        state.ledger.replans += 1
        self._phase = "replanning"
        self._replan_reason = reason
        self._cancel_inflight(f"plan version {state.version} is being replaced")
        self._with_compression(self._ask_for_replan)

    def _ask_for_replan(self) -> None:
        state = self._state
        plan = state.plan
        unfinished = [s for s in plan.steps if s.id not in state.committed]
        request_text = self._team.planner.prompts.replan_request(
            goal=state.goal,
            plan=plan,
            committed=state.committed_text(),
            unfinished=unfinished,
            reason=self._replan_reason,
            next_id=state.next_step_number(),
        )
        self._plan_tail("replan", request_text)

    def _plan_tail(self, purpose: Purpose, request_text: str) -> None:
        """Ask the planner for steps after the committed ones (a replan or a new round)."""
        state, team = self._state, self._team
        assert self._session is not None
        self._session = PlanningSession(
            system=self._session.system,
            messages=[Message.user(request_text)],
            max_steps=team.planner.max_steps,
            start_index=state.next_step_number(),
            workers=team.workers,
            checks=team.checks,
            known_ids=tuple(state.committed),
        )
        self._call_model(purpose, self._planner_caller, self._session.request())

    # -- rounds, critique, compression ----------------------------------------

    def _plan_done(self) -> None:
        """Every step of the current plan is committed: critique the round, or answer."""
        critic = self._team.critic
        # A critique is only worth its call if a synthesis can still follow it, and
        # if the round did something new to judge.
        nothing_new = self._state.round > 1 and self._round_added == 0
        if (
            critic is None
            or nothing_new
            or self._state.ledger.exhausted(model_calls_needed=2) is not None
        ):
            self._with_compression(self._synthesize)
            return
        self._phase = "critiquing"
        self._with_compression(self._ask_critic)

    def _ask_critic(self) -> None:
        assert self._team.critic is not None
        self._critique = CritiqueSession.open(
            team=self._team.name,
            critic=self._team.critic,
            prompts=self._team.planner.prompts,
            state=self._state,
        )
        self._call_model("critique", self._critic_caller, self._critique.request())

    def _on_critique(self, reply: str) -> None:
        state, session = self._state, self._critique
        assert session is not None
        verdict = session.evaluate(reply, self._team.planner.prompts)
        if verdict is None:
            self._call_model("critique", self._critic_caller, session.request())
            return
        state.verdicts.append(verdict)
        self._emit(CritiqueCompleted(run_id=state.run_id, verdict=verdict))
        if verdict.passed or state.round >= self._team.budget.rounds:
            self._synthesize()
            return
        state.round += 1
        self._replan_reason = (
            f"round {state.round}: the critic found the goal unmet: {verdict.feedback}"
        )
        self._emit(RoundStarted(run_id=state.run_id, round=state.round, feedback=verdict.feedback))
        self._phase = "planning"
        request_text = self._team.planner.prompts.round_request(
            goal=state.goal,
            round=state.round,
            committed=state.committed_text(),
            feedback=verdict.feedback,
            next_id=state.next_step_number(),
        )
        self._plan_tail("round", request_text)

    def _with_compression(self, then: Callable[[], None]) -> None:
        """Run ``then`` now, or after compressing the carried context if it is too big."""
        team, state = self._team, self._state
        before = compression_due(team.compression, state)
        if before is None or team.compression is None:
            then()
            return
        self._after_compress, self._compress_before = then, before
        request = compress_request(
            team=team.name, compression=team.compression, prompts=team.planner.prompts, state=state
        )
        self._call_model("compress", self._compress_caller, request)

    def _on_compressed(self, reply: str) -> None:
        self._emit(apply_compression(self._state, reply, before_tokens=self._compress_before))
        then, self._after_compress = self._after_compress, None
        assert then is not None
        then()

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

    def _on_exhausted(self, limit: str, detail: str) -> None:
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


_ROLES: dict[Purpose, str] = {
    "plan": "planner",
    "replan": "planner",
    "round": "planner",
    "critique": "critic",
    "compress": "compressor",
    "synthesis": "synthesizer",
}


def _model_failure(reply: ModelReplied) -> RunError:
    error = RunError(
        f"the {reply.purpose} model call failed: {type(reply.error).__name__}: {reply.error}"
    )
    error.__cause__ = reply.error
    return error
