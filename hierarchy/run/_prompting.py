"""What the planner actor asks its models: every planner-side call of a run, as data.

A ``Call`` is the phase the run enters and the request that phase waits on;
the actor enters it. Reading the planner's reply into a plan version is here
too, so the actor only records the outcome.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeAlias, assert_never, final

import msgspec

from regiment.errors import PlanError
from regiment.hierarchy._messages import BudgetLimit, StepReport
from regiment.hierarchy._planner import PlanningSession, no_plan_advice
from regiment.hierarchy._prompts import HookFailed, with_rejected
from regiment.hierarchy._top_up import afford
from regiment.hierarchy.plan._plan import Plan
from regiment.hierarchy.run import _logs as logs
from regiment.hierarchy.run._book import RunBook
from regiment.hierarchy.run._changes import PlanAdopted
from regiment.hierarchy.run._made_calls import (
    Cut,
    cut_now,
    cut_steps,
    not_held,
    with_made_calls,
)
from regiment.hierarchy.run._messages import Purpose
from regiment.hierarchy.run._phase import (
    AfterCompress,
    AskCritic,
    AskReplan,
    Compressing,
    Critiquing,
    PlanKind,
    Planning,
    Synthesize,
    Synthesizing,
)
from regiment.hierarchy.run._rounds import CritiqueSession, compress_request, compression_due
from regiment.hierarchy.run._runtime import TeamRuntime
from regiment.hierarchy.run._versions import PlanVersions
from regiment.models import Message, ModelRequest, estimate_tokens

__all__ = ("Call", "PlanReading", "Prompting")


@final
class Call(msgspec.Struct, frozen=True):
    """A planner-side model call: the phase that waits on it, and its request."""

    phase: Planning | Compressing | Critiquing | Synthesizing
    purpose: Purpose
    request: ModelRequest


PlanReading: TypeAlias = PlanAdopted | ModelRequest | PlanError
"""A planner reply read: a new version, the request that asks again, or the failure."""


@final
class Prompting:
    """Builds the plan, replan, round, critique, compress and synthesis requests."""

    # A compression the budget refused (``compression``): the limit, the context's size.
    unpaid: tuple[BudgetLimit, int] | None = None

    def __init__(self, team: TeamRuntime, goal: str, run_id: str, history: str = "") -> None:
        self._team = team
        self._goal = goal
        self._run_id = run_id  # for the log records
        self._history = history  # a session's earlier runs
        self._prompts = team.planner.prompts
        try:
            self._system = team.planner_system  # the same for every run of the team
        except HookFailed as exc:  # the run fails saying so (see RunSpawner.spawn)
            raise exc.run_error() from exc.__cause__

    def first_session(self) -> PlanningSession:
        """The conversation that asks for plan version 1."""
        team, prompts = self._team, self._prompts
        try:
            request = prompts.plan_request(self._goal, memory=self._history)
        except HookFailed as exc:  # as for planner_system: the run fails saying so
            raise exc.run_error() from exc.__cause__
        return PlanningSession(
            system=self._system,
            messages=[Message.user(request)],
            max_steps=team.planner.max_steps,
            start_index=1,
            workers=team.workers,
            checks=team.checks,
        )

    def tail_session(self, versions: PlanVersions, request_text: str) -> PlanningSession:
        """The conversation that asks for steps after the committed ones."""
        team = self._team
        return PlanningSession(
            system=self._system,
            messages=[Message.user(request_text)],
            max_steps=team.planner.max_steps,
            start_index=versions.next_step_number(),
            workers=team.workers,
            checks=team.checks,
            known_ids=tuple(versions.committed),
            kept={s.id: s for s in versions.plan.steps if versions.held_by(s.id)},
            rejected=tuple(versions.rejected),
            replaced_ids=[s.id for s in versions.plan.steps if s.id not in versions.committed],
        )

    def after_plan(self, book: RunBook) -> AfterCompress:
        """What follows a plan whose steps are all committed: a critique, or the answer
        (the planner checks the budget can pay for the critique and an answer after it)."""
        rounds = book.rounds
        # A critique is only worth its call if the round did something new to judge; a
        # first plan with no steps is the planner's "nothing to do": straight to the answer.
        nothing_new = rounds.added == 0 if rounds.round > 1 else not book.versions.committed
        if self._team.critic is None or nothing_new:
            return Synthesize()
        return AskCritic()

    def call(self, then: AfterCompress, book: RunBook) -> Call:
        """The call ``then`` asks for."""
        match then:
            case AskReplan(reason=reason):
                return self.tail("replan", book, self._replan_text(book, reason), reason)
            case AskCritic():
                assert self._team.critic is not None
                session = CritiqueSession.open(
                    run_id=self._run_id,
                    team=self._team.name,
                    goal=self._goal,
                    critic=self._team.critic,
                    prompts=self._prompts,
                    versions=book.versions,
                    round=book.rounds.round,
                )
                return Call(Critiquing(session), "critique", session.request())
            case Synthesize():
                return Call(Synthesizing(), "synthesis", self._synthesis(book))
            case _:
                assert_never(then)

    def compression(self, book: RunBook, then: AfterCompress) -> Call | None:
        """The compressor's call when the carried context is past its threshold, else ``None``.

        Also ``None`` when the budget cannot pay for it, the call ``then`` asks for and an
        answer after that: the context goes on as it is, rather than a compression taking
        the call (or the tokens) the answer needed (``unpaid``: the limit in the way, and
        the carried context's size)."""
        self.unpaid = None
        compression = self._team.compression
        before = compression_due(compression, book.versions, book.rounds)
        if before is None or compression is None:
            return None
        request = compress_request(
            team=self._team.name,
            compression=compression,
            prompts=self._prompts,
            versions=book.versions,
            rounds=book.rounds,
        )
        calls = 2 if isinstance(then, Synthesize) else 3
        ledger = book.spending.ledger
        if ledger.counts_tokens or ledger.budget.model_calls is not None:
            tokens = estimate_tokens(request) if ledger.counts_tokens else 0
            top_ups = book.channel.fence.top_ups  # a nested run's draws through its step
            if (
                limit := afford(ledger, top_ups, model_calls_needed=calls, tokens_needed=tokens)
            ) is not None:
                self.unpaid = (limit, before)  # the caller logs it, or waits first (nested)
                return None
        return Call(Compressing(before, then), "compress", request)

    def round(self, book: RunBook, feedback: str) -> Call:
        """The planner's call for the next round's steps (``book.rounds.round`` is that round)."""
        versions = book.versions
        reason = f"round {book.rounds.round}: the critic found the goal unmet: {feedback}"
        prompts, committed = self._prompts, versions.committed_text()
        text = prompts.round_request(
            goal=self._goal,
            round=book.rounds.round,
            committed=committed,
            feedback=feedback,
            next_id=versions.next_step_number(),
        )
        text = with_rejected(text, prompts.rejected_replan, committed)
        return self.tail("round", book, _with_calls(text, prompts.calls_made, versions), reason)

    def tail(self, kind: PlanKind, book: RunBook, text: str, reason: str) -> Call:
        session = self.tail_session(book.versions, text)
        return Call(Planning(kind, session, reason), kind, session.request())

    def read_plan(
        self, planning: Planning, text: str, versions: PlanVersions, *, cut_off: bool = False
    ) -> PlanReading:
        """Read a planner reply (``cut_off``: at its length limit): the plan version it
        gives, or what to do instead."""
        session, planner = planning.session, self._team.planner
        attempt = session.evaluate(text, cut_off=cut_off)
        if attempt.problems:
            if session.attempts >= planner.max_plan_attempts:
                problems = "; ".join(attempt.problems)
                message = (
                    f"the planner gave no valid plan in {session.attempts} attempts: {problems}"
                    + no_plan_advice(session.attempts)
                )
                return PlanError(message, last_reply=attempt.reply, problems=attempt.problems)
            session.reprompt(attempt.problems, self._prompts)
            why = f"attempt {session.attempts} of {planner.max_plan_attempts}: " + "; ".join(
                attempt.problems
            )
            logs.model_retry(self._run_id, planning.kind, planner.name, why)
            return session.request()
        parsed = attempt.parsed
        if parsed.truncated_from is not None:
            logs.plan_truncated(
                self._run_id, planning.kind, parsed.truncated_from, planner.max_steps
            )
        if planning.kind == "plan":
            plan = Plan(
                version=1,
                steps=parsed.steps,
                reason="initial",
                truncated_from=parsed.truncated_from,
            )
            return PlanAdopted(plan, "plan", None, parsed.steps)
        old = versions.plan
        again = {step.id for step in parsed.steps}  # a rejected step listed again runs again
        keep = tuple([sid for sid in versions.committed if sid not in again])
        plan = old.with_tail(
            keep=keep,
            new_steps=parsed.steps,
            reason=planning.reason,
            truncated_from=parsed.truncated_from,
        )
        return PlanAdopted(plan, planning.kind, old, parsed.steps)

    def _replan_text(self, book: RunBook, reason: str) -> str:
        versions = book.versions
        plan, prompts, committed = versions.plan, self._prompts, versions.committed_text()
        text = prompts.replan_request(
            goal=self._goal,
            plan=plan,
            committed=committed,
            unfinished=[s for s in plan.steps if s.id not in versions.committed],
            reason=reason,
            next_id=versions.next_step_number(),
        )
        text = with_rejected(text, prompts.rejected_replan, committed)
        return _with_calls(text, prompts.calls_made, versions, cut_steps(book))

    def _synthesis(self, book: RunBook) -> ModelRequest:
        prompts, committed = self._prompts, book.versions.committed_text()
        text = prompts.synthesis_request(
            goal=self._goal, committed=committed, artifacts=book.versions.artifacts
        )
        text = with_rejected(text, prompts.rejected_answer, committed)
        return ModelRequest(system=self._team.synthesizer_system, messages=(Message.user(text),))


def _with_calls(
    text: str, line: str, versions: PlanVersions, cutting: Sequence[StepReport | Cut] = ()
) -> str:
    """``text`` with the tool calls of the steps whose result did not hold listed after
    ``line`` (see :mod:`regiment.hierarchy.run._made_calls`), if any made some; the
    steps cut as the current version is replaced too (``cutting``, a replan's)."""
    if not line:
        return text
    cut = [*(cut_now(versions) if versions.cut else ()), *cutting]
    return with_made_calls(text, line, not_held(versions), versions.rejected, cut)
