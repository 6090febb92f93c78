"""The planner actor of one run: it receives, decides and sends.

Plan versions: once a replan starts, every report of the old version that
arrives (a slow step still in flight) is dropped, counted and recorded, never
committed. A version exists only once its plan is announced (``_adopt``), and
events name only announced versions: a report dropped mid-replan names the
version being replaced as current, since the next one may never come. Steps of older versions
still winding down do not hold up the current plan.

The actor is layered: :class:`RunBase` (state, model calls, endings),
:class:`RunRounds` (tails, critique, compression), and this class (the handler,
planning replies, dispatch, reports, checks and replans).
"""

from __future__ import annotations

from typing import assert_never

from regiment.errors import (
    PlanError,
    RunError,
    StepFailed,
)
from regiment.hierarchy._events import (
    CheckFailed,
    PlanCreated,
    Replanned,
    RunStarted,
    StaleReportDropped,
    StepCompleted,
    StepDispatched,
    StepErrored,
    tool_failures,
)
from regiment.hierarchy._fan_out import reserve_fan_out
from regiment.hierarchy._messages import (
    AssignStep,
    StepReport,
)
from regiment.hierarchy._plan import Plan
from regiment.hierarchy._plan_parse import ParsedPlan
from regiment.hierarchy._planner import PlanningSession
from regiment.hierarchy._rounds import (
    RunRounds,
)
from regiment.hierarchy._run_base import ROLES, TeamRuntime, model_failure
from regiment.hierarchy._run_messages import (
    CancelRun,
    DeadlineReached,
    ModelReplied,
    PlannerMessage,
    Purpose,
    StartRun,
)
from regiment.models import Message, ModelResponse
from regiment.telemetry import (
    record_check,
    record_stale_report,
)

__all__ = ("RunActor", "TeamRuntime")


class RunActor(RunRounds):
    """Drives one run from goal to answer."""

    async def receive(self, message: PlannerMessage) -> None:
        try:
            await self._handle(message)
        except Exception as exc:
            # A bug while handling one message fails this run with the real cause
            # (before the crash retires the actor), then the supervisor sees it too.
            if not self._channel.done:
                error = RunError(
                    f"the run's planner failed while handling {type(message).__name__}: "
                    f"{type(exc).__name__}: {exc}"
                )
                error.__cause__ = exc
                self._fail(error)
            raise

    async def _handle(self, message: PlannerMessage) -> None:
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

    def _start(self) -> None:
        state, team = self._state, self._team
        self._emit(RunStarted(run_id=state.run_id, goal=state.goal, team=team.name))
        if team.budget.wall_clock is not None:
            self._start_deadline(team.budget.wall_clock)
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

    async def _on_model_reply(self, reply: ModelReplied) -> None:
        if reply.token != self._token or self._phase in ("winding_down", "done"):
            return  # superseded or cancelled
        self._model_scope = None
        if reply.error is not None or reply.response is None:
            self._fail(reply.error if isinstance(reply.error, RunError) else model_failure(reply))
            return
        response = reply.response
        self._state.charge(ROLES[reply.purpose], response.usage, model_calls=1)
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
        session, prompts = self._session, self._team.planner.prompts
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
        self._adopt(purpose, attempt.parsed)
        self._phase = "executing"
        await self._dispatch_ready()

    def _adopt(self, purpose: Purpose, parsed: ParsedPlan) -> None:
        """The only place a version comes to exist: appended and announced together, so
        ``state.version`` (what events name) is always an announced version."""
        state = self._state
        if purpose == "plan":
            plan = Plan(
                version=1,
                steps=parsed.steps,
                reason="initial",
                truncated_from=parsed.truncated_from,
            )
        else:
            plan = state.plan.with_tail(
                keep=tuple(state.committed), new_steps=parsed.steps, reason=self._replan_reason
            )
        old = state.plan if state.plans else None
        state.plans.append(plan)
        if purpose == "round":
            self._round_added = len(parsed.steps)
        elif purpose == "replan" and old is not None:
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

    async def _dispatch_ready(self) -> None:
        state, team = self._state, self._team
        if self._phase != "executing":
            return
        plan = state.plan
        ready = state.ready()[: max(0, team.concurrency - len(state.running_ids(plan.version)))]
        dispatches, short_of = reserve_fan_out(state, team, ready)
        if short_of is not None and not dispatches and not state.inflight:
            step_id = ready[0].id
            self._on_exhausted(short_of, f"no budget left to dispatch step {step_id}")
            return
        for d in dispatches:
            state.dispatched(plan.version, d.step.id, 1, d.worker.name)
            assign = AssignStep(
                run_id=state.run_id,
                plan_version=plan.version,
                step=d.step,
                context=d.context,
                attempt=1,
                allowance=d.allowance,
            )
            self._emit(
                StepDispatched(
                    run_id=state.run_id,
                    plan_version=plan.version,
                    step_id=d.step.id,
                    worker=d.worker.name,
                    attempt=1,
                )
            )
            await team.worker_refs[d.worker.name].send(assign, headers=self._run_headers)
        # Steps of older versions still winding down (cancelled, but maybe stuck in
        # a call that ignores cancellation) do not hold up the current plan.
        if not state.running_ids(plan.version) and all(s.id in state.committed for s in plan.steps):
            self._plan_done()

    async def _on_report(self, report: StepReport) -> None:
        state = self._state
        state.reported(report.plan_version, report.step_id, report.attempt)
        state.ledger.release(f"{report.plan_version}/{report.step_id}/{report.attempt}")
        state.charge(
            report.worker,
            report.usage,
            model_calls=report.model_calls,
            tool_calls=report.tool_calls,
        )
        for failed in tool_failures(report):
            self._emit(failed)
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
        # The newest announced version: while a replan is in progress that is still
        # the version being replaced (the next one may never come to exist).
        current = state.version
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
        step = state.step(report.step_id)
        if report.status == "budget_exhausted":
            self._on_exhausted(
                report.exhausted or "model_calls",
                f"step {step.id} used up its share of the budget: {report.error}",
            )
            return
        if report.refused_tool_calls and self._refusals_end_run(report):
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
