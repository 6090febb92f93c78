"""The part of the planner actor that reads plans and answers, with their guards.

``PlannerActor`` inherits it: a plan reply becomes a plan (or a re-prompt, or
the run's ``PlanError``), and when the team has plan or answer guards, the
plan and the answer pass through them (``RunGuards``) before they are acted on.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable
from typing import TYPE_CHECKING, assert_never

from opentelemetry.trace import Span

from regiment.actors import Actor
from regiment.errors import GuardrailError, PlanError, RegimentError, RunError
from regiment.hierarchy._cut_calls import billed
from regiment.hierarchy._messages import BudgetLimit, StepReport
from regiment.hierarchy._model_call import described, raised_class
from regiment.hierarchy._nested_afford import Unaffordable
from regiment.hierarchy._result import RunStatus
from regiment.hierarchy.guard._judge import Purse, judging_within, ledger_purse
from regiment.hierarchy.guard._roles import GuardRole
from regiment.hierarchy.run._book import RunBook
from regiment.hierarchy.run._calls import PhaseCalls
from regiment.hierarchy.run._changes import (
    GuardsNoted,
    ModelCharged,
    PlanAdopted,
    ReportArrived,
    ReportDropped,
    RunChange,
)
from regiment.hierarchy.run._dispatch import Replayed
from regiment.hierarchy.run._guarding import (
    RunGuards,
    answer_verdict,
    as_before,
    partial_verdict,
    plan_verdict,
)
from regiment.hierarchy.run._messages import GuardJudged, ModelReplied, PlannerMessage, Purpose
from regiment.hierarchy.run._phase import (
    EndPartial,
    Executing,
    Phase,
    Planning,
    Synthesize,
    Synthesizing,
    WindingDown,
)
from regiment.hierarchy.run._prompting import PlanReading, Prompting
from regiment.hierarchy.run._runtime import TeamRuntime
from regiment.models import ModelRequest, ModelResponse

__all__ = ("GuardedActor",)

# Whose usage a guard's own model call is charged to (see ``regiment.hierarchy.guard.judge``).
_PURPOSES: dict[GuardRole, Purpose] = {
    "planner": "plan",
    "critic": "critique",
    "synthesizer": "synthesis",
}

_log = logging.getLogger("regiment.run")


class GuardedActor(Actor[PlannerMessage, None]):
    """Plan and answer handling of :class:`~regiment.hierarchy.run._actor.PlannerActor`."""

    _team: TeamRuntime
    _book: RunBook
    _calls: PhaseCalls
    _prompting: Prompting
    _phase: Phase
    _guards: RunGuards

    # -- provided by PlannerActor ---------------------------------------------

    def _record(self, change: RunChange) -> None:
        raise NotImplementedError

    def _ask(self, purpose: Purpose, request: ModelRequest) -> None:
        raise NotImplementedError

    def _fail(self, error: RunError) -> None:
        raise NotImplementedError

    def _finish_answer(self, answer: str) -> None:
        raise NotImplementedError

    def _finish(self, answer: str, status: RunStatus) -> None:
        raise NotImplementedError

    def _dispatch_ready(self) -> Awaitable[None] | None:
        raise NotImplementedError

    if TYPE_CHECKING:  # JudgesRounds' (after this class in PlannerActor's bases)

        def _exhausted(self, limit: BudgetLimit, detail: str, *, drain: bool = False) -> None: ...

        def _on_report(self, report: StepReport) -> Awaitable[None] | None: ...  # the actor's

    # -- plans and answers -----------------------------------------------------

    def _note_guards(self) -> None:
        """Record what the planner side's guards did since the last time, and charge
        their own model calls to their role."""
        log = self._guards.log
        if log.notes:
            self._record(GuardsNoted(self._guards.drain()))
        while log.spent:  # usage only: a judge's reply is journaled as it comes (JudgeTape)
            role, response = log.spent.pop(0)
            self._record(ModelCharged(_PURPOSES[role], response.usage))

    def _failed_call(self, reply: ModelReplied) -> None:
        """Fail the run for a planner-side call that failed, charging what it spent all
        the same (a refused reply, structured answers that never validated)."""
        if (spent := billed(reply.error)) is not None:
            self._record(ModelCharged(reply.purpose, spent[0], calls=spent[1]))
        error = reply.error
        if isinstance(error, Unaffordable):  # a nested run's, after waiting: as one refused
            self._exhausted(error.unpaid, str(error))
            return
        self._fail(error if isinstance(error, RunError) else model_failure(reply))

    async def _on_plan_reply(
        self, planning: Planning, reply: ModelResponse, span: Span | None
    ) -> None:
        reading = self._prompting.read_plan(
            planning, reply.text, self._book.versions, cut_off=reply.cut_off
        )
        if span is not None:  # the call's span, still open
            recorder = self._team.telemetry.recorder
            if isinstance(reading, PlanAdopted):
                recorder.plan_steps(span, len(reading.plan.steps))
            else:  # asked again (or out of attempts): this reply gave no plan
                recorder.plan_refused(span, planning.session.problems)
        if isinstance(reading, PlanAdopted) and self._guards.plan:
            with judging_within(self._purse(), self._guards.log.tape):
                self._guards.start_plan(self.ctx, reading, tuple(self._book.versions.committed))
            return
        await self._take_plan(planning, reading)

    async def _take_plan(self, planning: Planning, reading: PlanReading | GuardrailError) -> None:
        match reading:
            case PlanAdopted():
                self._record(reading)
                self._drop_held(reading.plan.version)
                self._phase = Executing()
                if (rest := self._dispatch_ready()) is not None:
                    await rest
            case ModelRequest():
                self._ask(planning.kind, reading)  # the problems go back to the planner
            case PlanError() | GuardrailError():  # a plan guard that failed: its error
                self._fail(reading)
            case _:
                assert_never(reading)

    async def _sent_rest(self, replayed: Replayed, rest: Awaitable[Replayed] | None) -> None:
        """Send what a full mailbox held back; take a resume's replayed reports."""
        for report, current in replayed if rest is None else await rest:
            if current is not None:  # dropped before the resume: dropped again, as it was
                self._drop_again(report, current)
            elif (more := self._on_report(report)) is not None:
                await more

    def _drop_again(self, report: StepReport, current: int) -> None:
        """Drop again, as it was, a replayed report the run dropped as stale before its
        resume. The resume replays it as its step is sent, before the replan that replaced
        its version: it is held until the resumed run has replaced that version and
        announced the one its drop named (``current``), as the run was then."""
        self._book.dispatcher.hold(report, current)

    def _drop_held(self, upto: int | None) -> None:
        """Drop the held reports due once version ``upto`` is adopted (all at the run's
        end, each naming at most the version it reached)."""
        version = self._book.versions.version
        for report, current in self._book.dispatcher.held(upto):
            self._record(ReportArrived(report))
            self._record(ReportDropped(report, min(current, version)))

    def _purse(self) -> Purse:
        """The run's budget for its plan and answer guards' judges (a nested run's draws
        what a judge's call lacks through the step it serves)."""
        book = self._book
        return ledger_purse(book.spending.ledger, top_ups=book.channel.fence.top_ups)

    def _on_answer(self, text: str) -> None:
        if self._guards.answer:
            with judging_within(self._purse(), self._guards.log.tape):
                self._guards.start_answer(self.ctx, text)
        else:
            self._finish_answer(text)

    async def _on_guard_judged(self, judged: GuardJudged) -> None:
        """The plan or answer guards' verdict (see ``RunGuards``)."""
        if not self._guards.accept(judged):
            return  # the run moved on
        self._note_guards()
        phase, checked, planner = self._phase, judged.checked, self._team.planner
        if isinstance(phase, Planning) and judged.adopted is not None:
            verdict = plan_verdict(
                phase, judged.adopted, checked, planner.prompts, planner.max_plan_attempts
            )
            if isinstance(verdict, PlanAdopted) and (journal := self._book.channel.journal):
                before = journal.calls.replay.plan_before(verdict.plan.version)
                verdict = as_before(verdict, before, checked.subject)
            await self._take_plan(phase, verdict)
        elif type(phase) is WindingDown and type(phase.ending) is EndPartial:
            exhausted = self._book.spending.exhausted or ""
            self._finish(partial_verdict(checked, exhausted, self._book.run_id), "partial")
        elif isinstance(phase, Synthesizing):
            synthesis = self._prompting.call(Synthesize(), self._book).request
            match answer_verdict(self._guards, checked, synthesis):
                case str() as answer:
                    self._calls.tell_answer(answer)
                    self._finish_answer(answer)
                case ModelRequest() as again:
                    self._ask("synthesis", again)
                case error:
                    self._fail(error)


def model_failure(reply: ModelReplied) -> RunError:
    """The run's error for a failed planner-side call."""
    why = "no detail" if reply.error is None else described(reply.error)
    error = RunError(f"the {reply.purpose} model call failed: {why}")
    error.__cause__ = reply.error
    if reply.error is not None and not isinstance(reply.error, RegimentError):
        # The application's model raised: a stream's RunFailed and a service's view keep
        # only the text; the traceback goes to the log (at DEBUG, as a step's does). Its
        # message may quote the user's text, so the line names its class only: an
        # exported log record carries the line, not the traceback (content capture off).
        _log.debug(
            "the %s model call failed: %s (traceback below)",
            reply.purpose,
            raised_class(reply.error),
            exc_info=reply.error,
        )
    return error
