"""How a run's planner takes the critic's verdict on a round: another round, the
answer, or (the rounds spent and the goal still unmet) a spent ``rounds`` budget;
and how it ends a run whose budget ran out (its synthesis' second ask unpaid too).

A part of :class:`~regiment.hierarchy.run._actor.PlannerActor`, kept here so the
actor stays a router: the changes still go through its one door, ``_record``.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import TypeAlias

import anyio
from opentelemetry.trace import Span

from regiment.actors import ActorContext
from regiment.errors import BudgetExceeded
from regiment.hierarchy._messages import BudgetLimit
from regiment.hierarchy._nested_afford import may_wait, waited
from regiment.hierarchy._top_up import afford
from regiment.hierarchy.run import _logs as logs
from regiment.hierarchy.run._book import RunBook
from regiment.hierarchy.run._calls import PhaseCalls
from regiment.hierarchy.run._changes import BudgetRanOut, CritiqueJudged, RoundBegun, RunChange
from regiment.hierarchy.run._messages import GaveBack, PlannerMessage, Purpose
from regiment.hierarchy.run._phase import (
    AfterCompress,
    AskCritic,
    Done,
    EndFailed,
    Ending,
    EndPartial,
    Phase,
    Synthesize,
    WindingDown,
)
from regiment.hierarchy.run._prompting import Call, Prompting
from regiment.hierarchy.run._reask import Unpaid
from regiment.hierarchy.run._rounds import CritiqueSession, rounds_spent
from regiment.hierarchy.run._runtime import TeamRuntime
from regiment.models import ModelRequest, estimate_tokens, least_cost

__all__ = ("JudgesRounds", "Unasked")

Unasked: TypeAlias = "tuple[Purpose, ModelRequest] | AfterCompress | None"
"""What waits for steps to give back, to be tried again: a planner-side call, the call a
compression came before (``AfterCompress``), or (``None``) a step to send or the check
before a critique (dispatch looks again)."""


class JudgesRounds:
    """The planner actor's critique handling and its end on a spent budget (mixed
    into ``PlannerActor``)."""

    _book: RunBook
    _phase: Phase
    _team: TeamRuntime
    _prompting: Prompting
    _calls: PhaseCalls
    _unasked: tuple[Phase, Unasked] | None
    ctx: ActorContext[PlannerMessage, None]

    def take_turn(self, message: PlannerMessage) -> Awaitable[None]:
        raise NotImplementedError  # TakesTurns'

    def _dispatch_ready(self) -> Awaitable[None] | None:
        raise NotImplementedError  # PlannerActor's

    def _record(self, change: RunChange) -> None:
        raise NotImplementedError  # PlannerActor's

    def _ask(self, purpose: Purpose, request: ModelRequest) -> None:
        raise NotImplementedError  # PlannerActor's

    def _enter(self, call: Call) -> None:
        raise NotImplementedError  # PlannerActor's

    def _wait_for_cancelled(self, call: tuple[Purpose, ModelRequest] | None = None) -> bool:
        raise NotImplementedError  # PlannerActor's

    def _wind_down(self, ending: Ending, *, drain: bool = False) -> None:
        raise NotImplementedError  # PlannerActor's

    def _end_as(self, ending: Ending) -> None:
        raise NotImplementedError  # EndsRun's (before this class in PlannerActor's bases)

    def _on_answer(self, text: str) -> None:
        raise NotImplementedError  # GuardedActor's

    def _exhausted(self, limit: BudgetLimit, detail: str, *, drain: bool = False) -> None:
        """End the run on a spent budget; ``drain``: a step's own share ran out, and its
        siblings in flight hold theirs, so they finish (not cancelled: no work lost)."""
        if type(phase := self._phase) is WindingDown and phase.draining:
            self._wind_down(phase.ending)  # the wall clock ran out meanwhile: cut them
            return
        if isinstance(phase, (Done, WindingDown)):
            return
        if not self._book.spending.exhausted:  # else noted: it answers from what was done
            self._record(BudgetRanOut(limit, detail, drain))
        raising = self._team.budget.on_exhausted == "raise"
        held = getattr(self._book.spending.ledger.budget, limit)  # what to raise to go further
        error = BudgetExceeded(
            f"budget exhausted: {detail} (the team's limit is Budget({limit}={held!r}); "
            "raise it for runs that go further)",
            limit=limit,
        )
        self._wind_down(EndFailed(error) if raising else EndPartial(), drain=drain)

    def _on_synthesis(self, text: str, unpaid: Unpaid | None) -> None:
        """The synthesizer's answer ``text``; one that was empty (or not valid) and that
        the budget could not pay to ask for again (``unpaid``) is not the answer: the run
        ends on that limit, as any budget stop does."""
        if unpaid is None:
            self._on_answer(text)
        else:
            self._exhausted(unpaid.limit, unpaid.detail(text))

    def _next(self, then: AfterCompress) -> None:
        """Make the call ``then`` asks for, compressing the carried context first if due
        (and paid for: a nested run may wait for the run above first, ``_waits_above``)."""
        prompting = self._prompting
        call = prompting.compression(self._book, then)
        if call is None and prompting.unpaid is not None:
            if self._waits_above(then):
                return
            logs.compression_skipped(self._book.run_id, *prompting.unpaid)
        self._enter(call or prompting.call(then, self._book))

    def _waits_above(self, then: Unasked) -> bool:
        """A nested run's check the budget refused (before a critique, a compression, a
        dispatch), with nothing of its own in flight to give back: whether it waits for
        the run above to give back, as its own calls do (``_nested_afford.waited``, in a
        task of its call runner), then looks again (``GaveBack``: ``then`` is tried again).
        They refused at once, though a sibling above was about to give back enough."""
        book = self._book
        turn = self.take_turn

        async def waiting(scope: anyio.CancelScope) -> None:
            with scope:
                await waited(book.spending.ledger, book.channel.fence.top_ups)
            if not scope.cancel_called:  # else the run winds down: nothing to try again
                await turn(GaveBack())

        if not may_wait(book.channel.fence.top_ups):
            return False
        self._unasked = (self._phase, then)
        self._calls.off_turn(self.ctx, waiting)
        return True

    def _reported(self) -> Awaitable[None] | None:
        """After a report: the run's end, once nothing is in flight; or what it waited for."""
        phase = self._phase
        if type(phase) is WindingDown and not self._book.dispatcher.inflight:
            self._end_as(phase.ending)
        elif self._unasked is not None:  # it waits for what the cancelled steps held
            return self._look_again()
        return None

    async def _reported_after(self, rest: Awaitable[None]) -> None:
        """A report's dispatch that had to wait (``rest``), then what follows the report."""
        await rest
        if (then := self._reported()) is not None:
            await then

    async def _look_again(self) -> None:
        """Try again what waited for steps to give back (``_unasked``), unless the run's
        phase moved on meanwhile."""
        if (unasked := self._unasked) is None:
            return
        (held, then), self._unasked = unasked, None
        if held is not self._phase:
            return
        if then is None:  # a step to send, or the critique check: dispatch looks again
            if (rest := self._dispatch_ready()) is not None:
                await rest
        elif isinstance(then, tuple):
            self._ask(*then)
        else:
            self._next(then)

    def _after_plan(self) -> None:
        """A plan's steps are all committed: critique the round, or answer. A critique
        the budget cannot pay for (with an answer after it) leaves the round unjudged, so
        the run's answer is ``partial`` (or ``BudgetExceeded``), as when rounds run out;
        judged once the steps the run cancelled (a replan's old tail) have given back
        their shares, not against what they still held."""
        book = self._book
        then = self._prompting.after_plan(book)
        if isinstance(then, AskCritic) and (limit := self._unpaid_critique()):
            if self._wait_for_cancelled():  # checked again as they report
                return
            why = f"no budget left to critique round {book.rounds.round} and then answer"
            if self._team.budget.on_exhausted == "raise":
                self._exhausted(limit, why)
                return
            self._record(BudgetRanOut(limit, why))
            then = Synthesize()
        self._next(then)

    def _unpaid_critique(self) -> BudgetLimit | None:
        """The limit that cannot pay for a critique and an answer after it: two model
        calls and, under a token or money limit, both requests' estimated input (at
        their models' prices); a nested run draws what they lack from the run above."""
        book = self._book
        ledger, tokens, usd = book.spending.ledger, 0, 0
        if ledger.counts_tokens or ledger.holds_money:
            _, synth, critic, _ = self._team.role_callers
            for then, caller in ((AskCritic(), critic), (Synthesize(), synth)):
                needed = estimate_tokens(self._prompting.call(then, book).request)
                tokens += needed
                if ledger.holds_money and caller.price is not None:
                    usd += least_cost(caller.price.rates(), needed)
        top_ups = book.channel.fence.top_ups
        return afford(ledger, top_ups, model_calls_needed=2, tokens_needed=tokens, usd_needed=usd)

    def _on_critique(self, session: CritiqueSession, text: str, span: Span | None) -> None:
        """The critic answered: ask again if it did not parse, else judge the round."""
        book, budget = self._book, self._team.budget
        verdict = session.evaluate(text, self._team.planner.prompts)
        if span is not None:  # the call's span, still open
            recorder = self._team.telemetry.recorder
            if verdict is None or verdict.warning is not None:  # no verdict in the reply
                recorder.critique(span, passed=None)
            if verdict is not None:
                recorder.critique(span, passed=verdict.passed, feedback=verdict.feedback)
        if verdict is None:
            self._ask("critique", session.request())
            return
        self._record(CritiqueJudged(verdict))
        if (spent := rounds_spent(verdict, book.rounds.round, budget)) is not None:
            if budget.on_exhausted == "raise":
                self._exhausted("rounds", spent)  # the run winds down to BudgetExceeded
                return
            self._record(BudgetRanOut("rounds", spent))  # "partial": answers from what was done
        if verdict.passed or spent is not None:
            self._enter(self._prompting.call(Synthesize(), book))
            return
        self._record(RoundBegun(book.rounds.round + 1, verdict.feedback))
        self._enter(self._prompting.round(book, verdict.feedback))
