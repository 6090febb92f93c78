"""Model calls in flight when a run's process died: billed, though no reply came back.

A run whose budget limits model calls, tokens or money journals, durably before
each model call, the most that call may spend (:func:`most_spent`: its estimated input,
its ``max_tokens`` as output, their cost at its model's price). A resume charges each
started call with no response journaled after it at that most (:func:`charge_unanswered`),
before anything else is spent, so what the run counts is never less than what its
providers billed, and it cannot spend past its budget across a crash.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Awaitable
from typing import TYPE_CHECKING, Protocol, final

import msgspec

from regiment._text import counted
from regiment.journal import ModelCallStarted
from regiment.models import ModelRequest, Usage, effective_settings, estimate_tokens

if TYPE_CHECKING:
    from regiment.hierarchy._budget import Budget, BudgetLedger
    from regiment.hierarchy._messages import AssignStep, StepAllowance
    from regiment.hierarchy._model_call import ModelCaller
    from regiment.hierarchy._replay import Replay
    from regiment.hierarchy._spent import Spent
    from regiment.hierarchy.workers._journal_calls import CallLog

__all__ = (
    "charge_cut",
    "charge_lost",
    "charge_unanswered",
    "journal_intent",
    "holds_calls",
    "limits_spending",
    "most_spent",
    "planner_intents",
    "Started",
    "StepCut",
    "step_cut",
)

_log = logging.getLogger("regiment.run")


class Started(Protocol):
    """Journals a planner-side call's intent: its purpose, role, model caller, request,
    and which ask of the call it is (a synthesis asked again: 2, ...)."""

    def __call__(
        self, purpose: str, role: str, caller: ModelCaller, request: ModelRequest, ask: int = 1
    ) -> Awaitable[None]: ...


_PER_MILLION = 1_000_000


def limits_spending(allowance: StepAllowance) -> bool:
    """Whether a step's share limits what its model calls spend (tokens or money): then
    each call's intent is journaled before it is sent. (A share always counts model
    calls: a budget that limits only those holds them without it.)"""
    a = allowance
    return not (
        a.tokens is None
        and a.input_tokens is None
        and a.output_tokens is None
        and a.micro_usd is None
    )


def holds_calls(budget: Budget) -> bool:
    """Whether a run's budget limits its model calls or what they spend (tokens or
    money): then each call's intent is journaled before it is sent, so one in flight at a
    crash counts against every such limit on resume (a ``model_calls``-only budget's too:
    it used to journal none, and a resume sent that call again uncounted)."""
    b = budget
    return not (
        b.model_calls is None
        and b.tokens is None
        and b.input_tokens is None
        and b.output_tokens is None
        and b.usd is None
    )


def most_spent(caller: ModelCaller, request: ModelRequest) -> Usage:
    """The most ``request`` may spend sent through ``caller``: its estimated input (the
    budget's own check), its ``max_tokens`` over every layer of settings as output, and
    what they cost at the caller's price (the input at its dearest rate), rounded up."""
    own = request.settings if caller.settings is None else caller.settings.merge(request.settings)
    if own is not request.settings:
        request = msgspec.structs.replace(request, settings=own)
    applied = effective_settings(getattr(caller.model, "settings", None), request)
    output = request.max_tokens if applied.max_tokens is None else applied.max_tokens
    inputs = estimate_tokens(request)
    micro = 0
    if (price := caller.price) is not None:
        rates = price.rates()
        pico = max(rates[0], rates[2], rates[3]) * inputs + rates[1] * output
        micro = -(-pico // _PER_MILLION)
    return Usage(input_tokens=inputs, output_tokens=output, micro_usd=micro)


def planner_intents(
    log: CallLog, calls: dict[str, int], budget: Budget, critic: bool = False
) -> Started | None:
    """What journals a planner-side call's intent (``PhaseCalls``), under a ``budget``
    that limits model calls or spending (``holds_calls``); else, for a team with a
    ``critic``, the critique's alone (one in flight at a crash is counted on resume,
    whatever the budget); ``calls``: the run journal's count of replies by purpose."""
    if holds_calls(budget):
        return functools.partial(_planner_intent, log, calls)
    return functools.partial(_critique_intent, log, calls) if critic else None


async def _critique_intent(
    log: CallLog,
    calls: dict[str, int],
    purpose: str,
    role: str,
    caller: ModelCaller,
    request: ModelRequest,
    ask: int = 1,
) -> None:
    """:func:`_planner_intent` of a critique; nothing for another purpose."""
    if purpose == "critique":
        await _planner_intent(log, calls, purpose, role, caller, request, ask)


async def _planner_intent(
    log: CallLog,
    calls: dict[str, int],
    purpose: str,
    role: str,
    caller: ModelCaller,
    request: ModelRequest,
    ask: int = 1,
) -> None:
    """Journal a planner-side call's intent durably, keyed as its reply will be (a
    synthesis asked again: ``#{ask}`` after it, answered by that reply too: ``Replay``)."""
    key = f"{purpose}/{calls.get(purpose, 0) + 1}" + (f"#{ask}" if ask > 1 else "")
    await journal_intent(log, key, role, caller, request)


async def journal_intent(
    log: CallLog, key: str, role: str, caller: ModelCaller, request: ModelRequest
) -> None:
    """Journal, durably, that the call ``key`` of ``role`` is sent, and the most it may
    spend: a resume charges it at that most if no reply is journaled after it."""
    intent = ModelCallStarted(
        run_id=log.run_id, call_key=key, role=role, most=most_spent(caller, request)
    )
    await log.append(intent, durable=True)


def charge_unanswered(replay: Replay, spent: Spent, run_id: str) -> None:
    """Charge ``spent`` (a resumed run's before it spends anything, or a stalled run's being
    cancelled from its journal) with each model call its journal shows started and never
    answered, at the most it may have spent, by role; a WARNING on ``regiment.run`` says
    what was charged."""
    lost = replay.unanswered()
    if not lost:
        return
    total = _charged(spent, lost)
    _log.warning(
        "run %s: %s %s in flight when its process stopped (%s), and a provider bills "
        "each call it got though no reply was journaled; the run (resumed, or "
        "cancelled from its journal) counts each at the most it could have spent: "
        "%d tokens (%d input, %d output), $%.6f",
        run_id,
        counted(len(lost), "model call"),
        "was" if len(lost) == 1 else "were",
        ", ".join(f"{s.call_key} by {s.role!r}" for s in lost),
        total.input_tokens + total.output_tokens,
        total.input_tokens,
        total.output_tokens,
        total.micro_usd / _PER_MILLION,
    )


def _charged(spent: Spent | None, lost: list[ModelCallStarted]) -> Usage:
    """Charge ``spent`` with each of ``lost`` at its most, one model call each, by role."""
    total = Usage()
    for started in lost:
        if spent is not None:
            spent.charge_most(started.role, started.most)
        total = total + started.most
    return total


def charge_cut(spent: Spent, started: ModelCallStarted, where: str) -> None:
    """Charge a live run's ``spent`` with a model call cut in this process while in flight
    (its step or run cut: a replan, a cancel, a sibling's failure, the wall clock) at its
    most, as a lost replica's calls are (``charge_lost``); ``where``: the run and role,
    for the INFO line on ``regiment.run``. Not in the step's report: a journal keeps the
    call unanswered, so a later resume counts it once, from the journal."""
    most = _charged(spent, [started])
    _log.info(
        "%s: its model call %s was cut in flight; its provider bills a call it got though "
        "no usage came back, so the run counts it at the most it could have spent (an "
        "estimate, in RunResult.estimated_usage): %d tokens (%d input, %d output), $%.6f",
        where,
        started.call_key,
        most.input_tokens + most.output_tokens,
        most.input_tokens,
        most.output_tokens,
        most.micro_usd / _PER_MILLION,
    )


def charge_lost(
    spent: Spent | None, lost: list[ModelCallStarted], allowance: StepAllowance, where: str
) -> StepAllowance:
    """Charge a live run's ``spent`` with the model calls a step's Ray replica had in
    flight when it died (``lost``), at their most, as a resume charges those of a dead
    process (not the step's report: its journal keeps those started calls unanswered,
    so a resume counts each of them once); ``where``: the worker and step, for the
    WARNING on ``regiment.run``. The step's ``allowance`` less what they may have
    spent: what its retry may spend, so the run stays within its budget."""
    if not lost:
        return allowance
    total = _charged(spent, lost)
    _log.warning(
        "%s: its Ray replica died with %s in flight (%s), which a provider bills "
        "though no reply came back; the run counts each at the most it "
        "could have spent: %d tokens (%d input, %d output), $%.6f",
        where,
        counted(len(lost), "model call"),
        ", ".join(s.call_key for s in lost),
        total.input_tokens + total.output_tokens,
        total.input_tokens,
        total.output_tokens,
        total.micro_usd / _PER_MILLION,
    )
    a, used = allowance, total.input_tokens + total.output_tokens
    return msgspec.structs.replace(
        a,
        model_calls=_less(a.model_calls, len(lost)),
        tokens=_less(a.tokens, used),
        input_tokens=_less(a.input_tokens, total.input_tokens),
        output_tokens=_less(a.output_tokens, total.output_tokens),
        micro_usd=_less(a.micro_usd, total.micro_usd),
    )


@final
class StepCut:
    """A step's model calls cut in flight, charged to its run (in its process) at their
    most (``charge_cut``): under a budget on model calls, or a share that limits spending."""

    __slots__ = ("_spent", "_where", "_worker")

    def __init__(self, spent: Spent, where: str, worker: str) -> None:
        self._spent, self._where, self._worker = spent, where, worker

    def charge(
        self, key: str, caller: ModelCaller, request: ModelRequest, intent: ModelCallStarted | None
    ) -> None:
        """The step's call ``key`` was cut: charge it at its journaled ``intent``'s most,
        or (none journaled) at its most worked out now: the call itself made no estimate."""
        if intent is None:
            most = most_spent(caller, request)
            intent = ModelCallStarted(run_id="", call_key=key, role=self._worker, most=most)
        self.charge_started(intent)

    def charge_started(self, intent: ModelCallStarted) -> None:
        """The step's call whose ``intent`` is known was cut (a Ray replica's, told to the
        caller before it was sent): charge it at that intent's most."""
        charge_cut(self._spent, intent, self._where)


def step_cut(ledger: BudgetLedger, assign: AssignStep, worker: str) -> StepCut | None:
    """What charges a step's calls cut in flight to its run's ``ledger``, if its budget
    holds model calls or the step's share limits spending (``None``: nothing is)."""
    if ledger.budget.model_calls is None and not limits_spending(assign.allowance):
        return None
    where = f"run {assign.run_id}: worker '{worker}', step {assign.step.id}"
    return StepCut(ledger.spent, where, worker)


def _less(limit: int | None, used: int) -> int | None:
    return None if limit is None else max(0, limit - used)
