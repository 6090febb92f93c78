"""The planner-side model calls of one run: plan, replan, round, critique,
compress and synthesis, and the run's wall-clock deadline.

Each call runs in the planner's ``CallRunner`` (a task the planner actor owns,
which runs calls asked for back to back), in a cancel scope and its phase's span,
so the actor's handler never waits on a model. Its result, a ``ModelReplied``,
is handed to ``deliver`` in that task (the planner takes a turn to handle it,
see ``TakesTurns``), not sent through the mailbox. Every span hangs off the run span
explicitly: the ambient context of a handler is whichever message came in last.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from contextlib import AbstractContextManager, nullcontext
from typing import assert_never, final

import anyio
import msgspec
from opentelemetry.trace import INVALID_SPAN, Span

from regiment.actors import ActorContext
from regiment.hierarchy._afford import refused_detail
from regiment.hierarchy._budget import BudgetLedger
from regiment.hierarchy._clock import RunClock
from regiment.hierarchy._cut_calls import CutWatch
from regiment.hierarchy._in_flight import Started, holds_calls
from regiment.hierarchy._live_events import LiveChannel, live_sink
from regiment.hierarchy._log_context import LOG_MARK
from regiment.hierarchy._messages import BudgetLimit
from regiment.hierarchy._model_call import ModelCaller
from regiment.hierarchy._nested_afford import Unaffordable, afforded, may_wait
from regiment.hierarchy._top_up import afford
from regiment.hierarchy.guard._judge import Purse, judging_within, ledger_purse
from regiment.hierarchy.guard._roles import Caller, GuardLog, guarded
from regiment.hierarchy.run._call_runner import CallRunner, ScopedJob
from regiment.hierarchy.run._empty_answer import synthesized
from regiment.hierarchy.run._lender import CallLender
from regiment.hierarchy.run._messages import (
    DeadlineReached,
    ModelReplied,
    PlannerMessage,
    Purpose,
)
from regiment.hierarchy.run._phase_span import SpanFacts, phase_span
from regiment.hierarchy.run._reask import Reasks, Unpaid, held_limit
from regiment.hierarchy.run._replies import Replayed
from regiment.hierarchy.run._runtime import TeamRuntime
from regiment.hierarchy.run._structured import structured_call
from regiment.hierarchy.run._trace import RunTrace
from regiment.models import (
    ModelRequest,
    ModelResponse,
    Role,
    estimate_tokens,
    least_cost,
    reply_tokens,
)
from regiment.telemetry import semconv as sc

__all__ = ("ROLES", "PhaseCalls", "SpanFacts")

Context = ActorContext[PlannerMessage, None]
Deliver = Callable[[ModelReplied], Awaitable[None]]  # what a call's reply is handed to
# A planner-side call with no guards around it holds no purse for their judges.
_UNJUDGED: AbstractContextManager[None] = nullcontext()
_Asked = tuple[Purpose, ModelRequest, "SpanFacts", BudgetLedger, Deliver]  # a start()'s

# Whose usage a planner-side call is charged to.
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


@final
class PhaseCalls:
    """Starts, supersedes and cancels the run's planner-side model calls."""

    def __init__(
        self,
        team: TeamRuntime,
        trace: RunTrace,
        run_id: str,
        replayed: Callable[[Purpose], Replayed | None] = lambda _: None,
        channel: LiveChannel | None = None,
        guard_log: GuardLog | None = None,
        lender: CallLender | None = None,
        started: Started | None = None,
    ) -> None:
        self._team = team
        self._started = started  # a journaled run's: a call's intent, before it is sent
        self._trace = trace
        self._run_id = run_id  # the log context of its calls (an SDK's retries name the run)
        self._replayed = replayed  # a resumed run's journaled responses, by call
        self._live = live_sink(channel, run_id)  # a streamed run's: calls stream text to it
        # A nested run's calls draw what they lack through the step it serves (``afford``).
        self._top_ups = None if channel is None else channel.fence.top_ups
        telemetry, guards = team.telemetry, team.guards
        log = GuardLog() if guard_log is None else guard_log  # what the role guards did
        self._tape = log.tape  # where their judge calls are journaled (replayed)
        self._guard_spent = log.spent  # their charges: a dropped call's watch charges them
        planner_call, synth, critic_call, self._compressor = team.role_callers  # made once
        self._planner: Caller = planner_call
        self._synth: Caller = synth
        self._critic: Caller = critic_call
        if team.call_guarded:  # a role with model request or reply guards: wrapped per run
            self._planner = guarded(planner_call, "planner", guards, telemetry, log)
            self._synth = guarded(synth, "synthesizer", guards, telemetry, log)
            self._critic = guarded(critic_call, "critic", guards, telemetry, log)
        self._token = 0
        self._scope: anyio.CancelScope | None = None  # the call in flight, if any
        self._deadline: anyio.CancelScope | None = None  # while a wall-clock deadline runs
        self._runner: CallRunner | None = None  # made by the first call
        self._lender = lender  # run()'s caller, or the supervisor: the calls run in its task
        self._ledger: BudgetLedger | None = None  # the synthesis': set as it starts
        self._watch: CutWatch | None = None  # under a budget on calls or spending: a cut's
        self.refused = ""  # what the last call ``start`` refused needed, and what was left

    def start(
        self,
        ctx: Context,
        purpose: Purpose,
        request: ModelRequest,
        facts: SpanFacts,
        ledger: BudgetLedger,
        deliver: Deliver,
    ) -> BudgetLimit | None:
        """Start one call; its reply, a ``ModelReplied`` with a fresh token, is handed
        to ``deliver`` in the task that made the call.

        A call whose estimated input does not fit in what the budget has left never
        starts: the limit in the way is returned instead. ``deliver`` is held only
        while the call is queued or running (it is the planner's: held for longer,
        it would close a reference cycle through the planner).
        """
        money, guarded = ledger.holds_money, self._team.call_guarded  # (else no judge: no purse)
        if purpose == "synthesis":  # the ledger its later asks are held to (``Reasks``)
            self._ledger = ledger
        needed = estimate_tokens(request) if ledger.counts_tokens or money else 0  # a pass
        price = self._model_caller(purpose).price if money else None  # its model's
        rates = None if price is None else price.rates()
        usd_needed = 0 if rates is None else least_cost(rates, needed)
        limit = afford(ledger, self._top_ups, tokens_needed=needed, usd_needed=usd_needed)
        if limit is not None:  # refused; a nested run's waits for the run above (_when_paid)
            self.refused = refused_detail(ledger, limit, needed, usd_needed)
            asked = (purpose, request, facts, ledger, deliver)
            return _when_paid(self, ctx, asked, (needed, usd_needed), limit)
        request = msgspec.structs.replace(request, role=REQUEST_ROLES[purpose])
        if ledger.holds_replies or rates is not None:
            # its reply is held to what the run has left (of tokens, and of money)
            room = ledger.reply_room(needed) if ledger.holds_replies else None
            if rates is not None:
                paid = reply_tokens(rates, ledger.micro_usd_left() or 0, needed)
                room = paid if room is None else min(room, paid)
            held = self._model_caller(purpose).capped(request, room)
            if held is None:  # it thinks, and a reply that small leaves it no room to
                self.refused = ""
                return held_limit(ledger)
            request = held
        # A call cut is charged: under a budget that holds calls, and whatever the budget in
        # a team with a critic (a critique cut in flight is billed, so counted); its guards'
        # judge calls whatever the budget (charged as the call is cut, before the result)
        if self._watch is None and (
            (whole := holds_calls(ledger.budget) or self._team.critic is not None) or guarded
        ):
            where = f"run {self._run_id}"
            self._watch = CutWatch(ledger.spent, where, self._guard_spent, whole=whole)
        self._token += 1
        self._scope = ctx.system.new_cancel_scope()  # the backend's class: no lookup
        replayed = self._replayed(purpose)
        purse = ledger_purse(ledger, pending=1, top_ups=self._top_ups) if guarded else None
        call = (self._token, self._scope, replayed, purse, deliver)
        runner = self._runner
        if runner is None:
            runner = self._runner = CallRunner(ctx, self._lender)
        runner.submit(functools.partial(self._call, purpose, request, facts, call))
        return None

    def accept(self, reply: ModelReplied) -> bool:
        """Whether ``reply`` answers the latest call (an older one was superseded)."""
        if reply.token != self._token:
            return False
        self._scope = None
        if self._watch is not None:  # charged as the planner takes it: watched no more
            self._watch.accepted()
        return True

    def supersede(self) -> None:
        """Cancel the call in flight (charged: ``CutWatch``); a reply on its way is dropped."""
        if self._watch is not None:
            self._watch.cut()
        if self._scope is not None:
            self._scope.cancel()
            self._scope = None
        self._token += 1

    def stop(self) -> None:
        """The run has ended: cancel the deadline and the call in flight."""
        # Only scopes in use are cancelled: anyio's cancel() formats a task repr.
        if self._watch is not None:
            self._watch.cut()
        if self._deadline is not None:
            self._deadline.cancel()
        if self._scope is not None:
            self._scope.cancel()
        if self._runner is not None:
            self._runner.close()

    def off_turn(self, ctx: Context, job: ScopedJob) -> None:
        """Run ``job`` in the call runner's task, in a scope ``supersede`` and ``stop`` cut."""
        self._scope = scope = ctx.system.new_cancel_scope()
        self._runner = self._runner or CallRunner(ctx, self._lender)
        self._runner.submit(functools.partial(job, scope))

    def start_deadline(self, ctx: Context, seconds: float, clock: RunClock) -> None:
        """Count the run's wall-clock budget down on ``clock`` (approval waits hold it)."""
        self._deadline = ctx.system.new_cancel_scope()
        ctx.start_soon(_deadline, ctx, seconds, self._deadline, clock)

    def _model_caller(self, purpose: Purpose) -> ModelCaller:
        """The role's own model caller (under any guards), whose settings a call takes."""
        planner, synth, critic, compressor = self._team.role_callers
        return {"critique": critic, "compress": compressor, "synthesis": synth}.get(
            purpose, planner
        )

    def _caller(self, purpose: Purpose) -> Caller:
        match purpose:
            case "plan" | "replan" | "round":
                return self._planner
            case "critique":
                return self._critic
            case "compress":
                return self._compressor
            case "synthesis":
                return self._synth
            case _:
                assert_never(purpose)

    async def _call(
        self,
        purpose: Purpose,
        request: ModelRequest,
        facts: SpanFacts,
        call: tuple[int, anyio.CancelScope, Replayed | None, Purse | None, Deliver],
    ) -> None:
        token, scope, replayed, purse, deliver = call
        reply: ModelReplied | None = None  # stays None if superseded (the scope caught it)
        span: Span | None = None
        # The call's log mark, set and reset by C calls (a log_context is 3 Python calls, #22)
        mark, marked = LOG_MARK.set((self._run_id, None, self._team.planner.name)), True
        telemetry = self._trace.telemetry
        try:
            if (
                purse is None
                and purpose != "replan"
                and not (telemetry.traced or telemetry.tracing)
            ):
                # Unjudged, untraced, no replan metric: its guards' purse, the run span's
                # context and its phase span would be three null contexts (#22).
                span = INVALID_SPAN
                with scope:
                    reply = await _replied(self, purpose, request, token, replayed, span)
            else:
                # The purse holds the guards' model calls made in this call to the run's budget.
                with (
                    scope,
                    _UNJUDGED if purse is None else judging_within(purse, self._tape),
                    self._trace.in_run(),
                    phase_span(
                        self._team, self._model_caller(purpose).agent, purpose, facts
                    ) as span,
                ):
                    if purpose == "replan":  # the version it makes (its span names the planner)
                        telemetry.recorder.replan(span, new_version=facts.version + 1)
                    if replayed is not None and span.is_recording():  # journaled: not asked again
                        span.set_attribute(sc.REGIMENT_REPLAYED, True)
                    reply = await _replied(self, purpose, request, token, replayed, span)
            LOG_MARK.reset(mark)
            marked = False
            if reply is not None:  # handled here, outside the call's scope and marks, with
                await deliver(reply)  # its span no longer current but open: the reply's plan
                # is read meanwhile, and its steps go on the span
        finally:
            if marked:  # the block raised: its mark goes with it
                LOG_MARK.reset(mark)
            if self._watch is not None:  # a reply the planner did not take is charged
                self._watch.dropped()
            if span is not None and span is not INVALID_SPAN:
                span.end()

    async def _ask(
        self, purpose: Purpose, request: ModelRequest
    ) -> tuple[ModelResponse, int, Unpaid | None]:
        """The reply to one call, how many model calls it took, and (a synthesis) the
        budget that could not pay to ask again for an empty or invalid answer."""
        if (started := self._started) is not None:  # billed once sent: its intent first
            await started(purpose, ROLES[purpose], self._model_caller(purpose), request)
        if purpose != "synthesis":
            return await self._caller(purpose).call(request, self._live), 1, None
        shape, live = self._team.output, self._live
        if self._team.outcome_guards[1]:  # the answer guards (found once per team)
            live = None  # a reader sees only an answer the guards let through (tell_answer)
        reasks = None  # asked again (below): each ask held to what the run has left
        if (ledger := self._ledger) is not None:
            reasks = Reasks(ledger, self._team.role_callers[1], self._top_ups, self._started)
        if shape is not None:  # validated, re-asked (bounded)
            response, calls = await structured_call(self._synth, request, shape, reasks)
            # Told once valid: a re-asked invalid answer, or Claude's answer (a forced
            # tool call's arguments, no text), would otherwise not show as it should.
            if live is not None and (reasks is None or reasks.unpaid is None):
                live.tell(request, response.text)
        else:  # an empty answer is asked for again, once
            response, calls = await synthesized(self._synth, request, live, self._run_id, reasks)
        return response, calls, None if reasks is None else reasks.unpaid

    def tell_answer(self, answer: str) -> None:
        """Stream the answer the answer guards let through (held back while they judged)."""
        if self._live is not None:
            self._live.tell(ModelRequest(messages=(), role="synthesizer"), answer)


async def _replied(
    calls: PhaseCalls, purpose: Purpose, request: ModelRequest, token: int,
    replayed: Replayed | None, span: Span,
) -> ModelReplied:  # fmt: skip
    """The reply to one of ``calls``' calls (its failure, if the model raised), as the
    planner takes it."""
    try:
        if replayed is not None:
            asked: tuple[ModelResponse, int, Unpaid | None] = replayed
        elif (watch := calls._watch) is None:
            asked = await calls._ask(purpose, request)
        else:  # a call cut in flight is charged at its most
            with watch.sent(purpose, ROLES[purpose], calls._model_caller(purpose), request):
                asked = await calls._ask(purpose, request)
                watch.answered(asked[0].usage, asked[1])  # watched till taken
        response, count, unpaid = asked
        return ModelReplied(purpose, token, response, calls=count, span=span, unpaid=unpaid)
    except Exception as exc:  # any failure of the model ends the run with it
        calls._trace.telemetry.recorder.failure(span, exc)
        return ModelReplied(purpose, token, None, exc, span=span)


def _when_paid(
    calls: PhaseCalls, ctx: Context, call: _Asked, needs: tuple[int, int], limit: BudgetLimit
) -> BudgetLimit | None:
    """``limit``; ``None``: a nested run's call waits in a task for the run above to give
    back (``afforded``), then starts, or is refused, as any (its reply says so)."""
    if not may_wait(calls._top_ups):
        return limit
    purpose, ledger, deliver, token = call[0], call[3], call[4], calls._token

    async def when_paid(scope: anyio.CancelScope) -> None:  # superseded, stopped: it ends
        with scope:
            await afforded(ledger, calls._top_ups, *needs)  # paid, or no more waiting
            if (unpaid := calls.start(ctx, *call)) is not None:  # the run ends on it
                why = f"no budget left for the {purpose} model call{calls.refused}"
                await deliver(ModelReplied(purpose, token, None, Unaffordable(why, unpaid)))

    calls.off_turn(ctx, when_paid)
    return None


async def _deadline(
    ctx: Context, seconds: float, scope: anyio.CancelScope, clock: RunClock
) -> None:
    async def expired() -> None:
        await ctx.self_ref.send(DeadlineReached())

    with scope:
        await clock.run(seconds, expired)
