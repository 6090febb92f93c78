"""The run's plan and answer guards, run as a task the planner actor owns.

A plan (before its steps are dispatched) and the synthesized answer (before
the run returns it) go through their chains in a task with its own cancel
scope, like a planner-side model call: the actor's handler never waits on a
guard, and a slow guard is cancelled when the run ends. The verdict comes back
as a ``GuardJudged`` message.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, final

import anyio
import msgspec

from regiment.actors import ActorContext
from regiment.errors import GuardrailError, PlanError
from regiment.hierarchy._critic import Critic
from regiment.hierarchy._cut_calls import CutWatch
from regiment.hierarchy._log_context import log_context
from regiment.hierarchy._messages import BudgetLimit
from regiment.hierarchy._planner import Planner, no_plan_advice
from regiment.hierarchy._prompts import Prompts
from regiment.hierarchy.events import Event, GuardrailRewrote, GuardrailTripped
from regiment.hierarchy.guard._chain import Checked, Where, run_chain
from regiment.hierarchy.guard._judge import JudgeCall, Purse, judging_within, purse_spent
from regiment.hierarchy.guard._note import GuardNote
from regiment.hierarchy.guard._roles import GuardLog, GuardRole, RoleGuards
from regiment.hierarchy.guard._step import tripped
from regiment.hierarchy.guard._types import (
    AnswerSubject,
    GuardLike,
    Guardrail,
    PlanSubject,
    as_guardrails,
)
from regiment.hierarchy.plan._plan import Plan
from regiment.hierarchy.plan._validate import validate_plan
from regiment.hierarchy.run._changes import PlanAdopted
from regiment.hierarchy.run._messages import GuardJudged, PlannerMessage
from regiment.hierarchy.run._phase import Planning
from regiment.hierarchy.run._structured import AnswerShape
from regiment.hierarchy.run._trace import RunTrace
from regiment.models import Message, ModelRequest, ModelResponse

if TYPE_CHECKING:
    pass

__all__ = (
    "RunGuards",
    "answer_verdict",
    "as_before",
    "enclosing",
    "note_events",
    "partial_verdict",
    "plan_verdict",
    "role_guards",
)

Context = ActorContext[PlannerMessage, None]
_log = logging.getLogger("regiment.guardrail")


@final
@dataclass(slots=True)
class RunGuards:
    """One run's plan and answer guards, and the notes its role callers leave."""

    plan: tuple[Guardrail, ...]  # the chains over every plan and the answer
    answer: tuple[Guardrail, ...]
    trace: RunTrace
    goal: str
    log: GuardLog
    run_id: str = ""  # what the guards' log records carry (see ``log_context``)
    shape: AnswerShape | None = None  # a structured answer: a rewrite must still fit it
    answer_retried: bool = False
    _token: int = 0
    _scope: anyio.CancelScope | None = None
    # under a budget on calls or spending: charges the check's judge calls if it is cut
    _watch: CutWatch | None = None

    def drain(self) -> tuple[GuardNote, ...]:
        """The notes left since the last drain."""
        notes = tuple(self.log.notes)
        self.log.notes.clear()
        return notes

    def start_plan(self, ctx: Context, adopted: PlanAdopted, committed: tuple[str, ...]) -> None:
        plan = adopted.plan
        again = {s.id for s in adopted.added}  # a rejected step listed again is a new step
        kept = tuple(s for s in plan.steps if s.id in committed and s.id not in again)
        subject = PlanSubject(
            goal=self.goal,
            version=plan.version,
            steps=tuple(s for s in plan.steps if s.id not in committed or s.id in again),
            committed=kept,
        )
        self._start(ctx, self.plan, subject, adopted, Where("planner"))

    def start_answer(self, ctx: Context, text: str) -> None:
        subject = AnswerSubject(goal=self.goal, text=text)
        self._start(ctx, self.answer, subject, None, Where("synthesizer"))

    @property
    def judging(self) -> bool:
        """Whether a check is in flight."""
        return self._scope is not None

    def start_partial(
        self, ctx: Context, text: str, limit: BudgetLimit, seconds: float | None
    ) -> None:
        """Judge the answer of a run whose ``limit`` ran out before its synthesis: no judge
        call is made (the budget is spent), and ``seconds``, if given, bound the guards."""
        self._token += 1
        self._scope = anyio.CancelScope()
        purse = _spent_purse(limit)
        ctx.start_soon(self._run_partial, ctx, text, (purse, seconds), self._token, self._scope)

    async def _run_partial(
        self,
        ctx: Context,
        text: str,
        within: tuple[Purse, float | None],
        token: int,
        scope: anyio.CancelScope,
    ) -> None:
        purse, seconds = within
        with scope, log_context(self.run_id), judging_within(purse, self.log.tape):
            subject = AnswerSubject(goal=self.goal, text=text)
            telemetry, where = self.trace.telemetry, Where("synthesizer")
            deadline = math.inf if seconds is None else anyio.current_time() + seconds
            checked: Checked[Any] = Checked(subject)
            for guard in self.answer:  # one by one: a guard out of time is named
                one: Checked[Any] | None = None
                with self.trace.in_run(), anyio.CancelScope(deadline=deadline):
                    one = await run_chain(
                        (guard,), checked.subject, telemetry, self.log.notes, where
                    )
                if one is None:
                    reason = f"it did not judge it within {seconds:g} s (see Budget.wall_clock)"
                    self.log.notes.append(
                        GuardNote(
                            guardrail=guard.name,
                            subject="answer",
                            outcome="tripped",
                            reason=reason,
                            role="synthesizer",
                        )
                    )
                    checked = Checked(checked.subject, guard, reason)
                    break
                checked = one
                if one.tripped is not None:
                    break
            await ctx.self_ref.send(GuardJudged(token, checked, None))

    def accept(self, judged: GuardJudged) -> bool:
        """Whether ``judged`` answers the latest check (not one cancelled since)."""
        if judged.token != self._token:
            return False
        self._scope = self._watch = None  # what its judges spent: in the log, charged from it
        return True

    def stop(self) -> None:
        """Cancel the check in flight, if any; its verdict will not be accepted. Its judge
        calls are charged now, before the run's result is made (``CutWatch``): those in
        flight at their most, those that answered at what they reported."""
        if self._watch is not None:
            self._watch.cut()
            self._watch = None
        if self._scope is not None:
            self._scope.cancel()
            self._scope = None
        self._token += 1

    def _start(
        self,
        ctx: Context,
        chain: tuple[Guardrail, ...],
        subject: PlanSubject | AnswerSubject,
        adopted: PlanAdopted | None,
        where: Where,
    ) -> None:
        self._token += 1
        self._scope = anyio.CancelScope()
        if (spent := purse_spent()) is not None:  # the run's, in the purse judging_within set
            self._watch = CutWatch(spent, f"run {self.run_id}", self.log.spent)
        held = (self._token, self._scope, self._watch)
        ctx.start_soon(self._run, ctx, chain, subject, adopted, where, held)

    async def _run(
        self,
        ctx: Context,
        chain: tuple[Guardrail, ...],
        subject: PlanSubject | AnswerSubject,
        adopted: PlanAdopted | None,
        where: Where,
        held: tuple[int, anyio.CancelScope, CutWatch | None],
    ) -> None:
        token, scope, watch = held
        with scope, log_context(self.run_id), watch or _UNWATCHED:
            with self.trace.in_run():
                checked: Checked[PlanSubject | AnswerSubject] = await run_chain(
                    chain, subject, self.trace.telemetry, self.log.notes, where
                )
            if isinstance(subject, AnswerSubject) and checked.subject is not subject:
                checked = self._fitted(checked)
            self.log.charge("planner" if adopted is not None else "synthesizer", checked)
            await ctx.self_ref.send(GuardJudged(token, checked, adopted))

    def _fitted(self, checked: Checked[Any]) -> Checked[Any]:
        """A rewritten answer, held to the team's ``output_type`` as the synthesizer's is:
        one that no longer validates trips on the guard that last rewrote it."""
        problem = None if self.shape is None else self.shape.problem(checked.subject.text)
        if problem is None:
            return checked
        rewrote = [n for n in self.log.notes if n.outcome == "rewrote" and n.subject == "answer"]
        name = rewrote[-1].guardrail if rewrote else self.answer[-1].name
        guard = next(g for g in reversed(self.answer) if g.name == name)
        reason = f"rewrote the answer into one that does not validate against {problem}"
        self.log.notes.append(
            GuardNote(
                guardrail=name,
                subject="answer",
                outcome="tripped",
                reason=reason,
                role="synthesizer",
            )
        )
        return Checked(checked.subject, guard, reason, checked.spent)


_UNWATCHED: AbstractContextManager[None] = nullcontext()  # a check under no such budget

_CALL_KINDS = frozenset({"model_request", "model_reply", "tool_call", "tool_result"})


def enclosing(outer: Sequence[Sequence[GuardLike]]) -> list[Guardrail]:
    """The enclosing teams' guards on calls, outermost first: they guard a nested team's
    calls too (their plan and answer guards do not: a nested answer is a step's output)."""
    return [g for team in outer for g in as_guardrails(team) if g.kind in _CALL_KINDS]


def role_guards(team: Sequence[GuardLike], planner: Planner, critic: Critic | None) -> RoleGuards:
    """The guards of a team's planner side: the team's, and each role's own."""
    roles: dict[GuardRole, tuple[Guardrail, ...]] = {
        "planner": as_guardrails(planner.guardrails),
        "synthesizer": as_guardrails(planner.synthesizer_guardrails),
        "critic": as_guardrails(critic.guardrails) if critic is not None else (),
    }
    return RoleGuards(team=as_guardrails(team), roles=roles)


def note_events(run_id: str, notes: Sequence[GuardNote]) -> list[Event]:
    """One ``GuardrailTripped`` or ``GuardrailRewrote`` per note."""
    return [
        GuardrailTripped(
            run_id=run_id,
            guardrail=n.guardrail,
            subject=n.subject,
            reason=n.reason,
            role=n.role,
            worker=n.worker,
            step_id=n.step_id,
        )
        if n.outcome == "tripped"
        else GuardrailRewrote(
            run_id=run_id,
            guardrail=n.guardrail,
            subject=n.subject,
            role=n.role,
            worker=n.worker,
            step_id=n.step_id,
        )
        for n in notes
    ]


def plan_verdict(
    planning: Planning,
    adopted: PlanAdopted,
    checked: Checked[Any],
    prompts: Prompts,
    attempts: int,
) -> PlanAdopted | ModelRequest | PlanError | GuardrailError:
    """What a judged plan becomes: adopted (as the guards left it), sent back to the
    planner with the reason, or, with no attempts left, the run's ``PlanError``; a guard
    that failed (raised, returned no outcome) ends the run with a ``GuardrailError``: the
    planner's model cannot plan around a bug in the guard."""
    session = planning.session
    if checked.tripped is not None and checked.fault:
        name = checked.tripped.name
        return GuardrailError(
            f"guardrail '{name}' failed on the plan: it {checked.fault}; that is a bug in "
            f"the guard, not a plan the planner's model can mend (the plan was not sent "
            f"back to it): fix guardrail '{name}'",
            guardrail=name,
            subject="plan",
            reason=checked.reason,
        )
    if checked.tripped is None:
        subject, plan = checked.subject, adopted.plan
        steps = (*subject.committed, *subject.steps)
        if steps == plan.steps:
            return adopted
        invalid = validate_plan(
            subject.steps,
            workers=tuple(session.workers),
            known_ids=session.known_for(subject.steps),
            checks=tuple(session.checks),
            replaced_ids=session.replaced_ids,
        )
        if not invalid:
            rewritten = msgspec.structs.replace(plan, steps=steps)
            return PlanAdopted(rewritten, adopted.kind, adopted.replaced, subject.steps)
        problem = f"a guardrail rewrote the plan into an invalid one: {'; '.join(invalid)}"
    else:
        problem = f"guardrail '{checked.tripped.name}' rejected the plan: {checked.reason}"
    if session.attempts >= attempts:
        message = (
            f"the planner gave no acceptable plan in {session.attempts} attempts: {problem}"
            + no_plan_advice(session.attempts)
        )
        return PlanError(message, last_reply=session.messages[-1].text, problems=(problem,))
    session.reprompt((problem,), prompts)
    return session.request()


def _spent_purse(limit: BudgetLimit) -> Purse:
    """A partial run's budget, for its answer guards' judge calls: spent, whatever is left."""
    why = (
        f"the run's budget ran out ({limit}) before its answer was synthesized, and a judge "
        "call would overspend it"
    )

    def left(
        request: ModelRequest, made: Sequence[ModelResponse], call: JudgeCall
    ) -> tuple[BudgetLimit, str]:
        return limit, why

    return left


def partial_verdict(checked: Checked[Any], exhausted: str, run_id: str) -> str:
    """A partial run's answer as its answer guards leave it, or withheld, saying why."""
    if checked.tripped is None:
        answer: str = checked.subject.text
        return answer
    name = checked.tripped.name
    _log.info(
        "run %s ends partial: its answer is withheld by guardrail %s: %s",
        run_id,
        name,
        checked.reason,
        extra={"run_id": run_id, "guardrail": name},
    )
    return (
        f"Partial result (budget exhausted: {exhausted}): withheld by guardrail '{name}': "
        f"{checked.reason}; the committed steps' outputs are in RunResult.steps"
    )


def as_before(verdict: PlanAdopted, before: Plan | None, judged: object) -> PlanAdopted:
    """The plan version a resumed run adopts: as its guards adopted it before the resume,
    if they did (a guard that rewrites otherwise now would change the plan the journaled
    steps and calls belong to); ``judged``: the plan subject its guards judged now."""
    if before is None or before.steps == verdict.plan.steps:
        return verdict
    kept = len(judged.committed) if isinstance(judged, PlanSubject) else 0
    return PlanAdopted(before, verdict.kind, verdict.replaced, before.steps[kept:])


def answer_verdict(
    guards: RunGuards, checked: Checked[Any], synthesis: ModelRequest
) -> str | ModelRequest | GuardrailError:
    """What a judged answer becomes: the answer (as the guards left it), one more
    synthesis call told the reason, or the run's ``GuardrailError``."""
    if checked.tripped is None:
        answer: str = checked.subject.text
        return answer
    error = tripped(checked, "answer")
    if guards.answer_retried:
        return error
    guards.answer_retried = True
    retry = Message.user(
        f"Your answer was rejected: {error}. Write the final answer again so that it does not."
    )
    previous = Message.assistant(checked.subject.text)
    return msgspec.structs.replace(synthesis, messages=(*synthesis.messages, previous, retry))
