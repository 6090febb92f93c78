"""A guard's own model calls (LLM-as-judge): traced like every model call of the
run, charged to the run's budget (to the step's, inside a step), each reply held to
what that budget has left, and journaled like the run's other model replies (a
resumed run replays a judge's reply instead of asking, and paying, again)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from contextvars import ContextVar, Token
from dataclasses import dataclass, field
from typing import NamedTuple, TypeAlias, final

from anyio import get_cancelled_exc_class

from regiment.errors import BudgetExceeded, ModelError
from regiment.hierarchy._allowance import Rates
from regiment.hierarchy._budget import BudgetLedger, BudgetLimit
from regiment.hierarchy._cut_calls import (
    Charging,
    cut_charged,
    judge_cut,
    judge_done,
    judge_sent,
    replied,
)
from regiment.hierarchy._model_call import ModelCaller
from regiment.hierarchy._nested_afford import waited
from regiment.hierarchy._spent import Spent
from regiment.hierarchy._top_up import TopUps, afford
from regiment.hierarchy.guard._tape import JudgeTape, charge_failed, failure
from regiment.models import (
    Model,
    ModelRequest,
    ModelResponse,
    Usage,
    estimate_tokens,
    least_cost,
    reply_tokens,
)
from regiment.telemetry import Telemetry

__all__ = (
    "JudgeCall",
    "JudgeTape",
    "Purse",
    "Spend",
    "charged",
    "judge",
    "judging_reply",
    "judging_within",
    "ledger_purse",
    "purse_spent",
    "spending",
    "unpriced_judge",
    "unreplayed",
)

_log = logging.getLogger("regiment.guardrail")


class JudgeCall(NamedTuple):
    """Who makes a judge call: the guard, its model's name, and the model's price
    (``Price.rates()``; ``None``: it has none)."""

    guard: str
    model: str
    rates: Rates | None


# What a judge's call (``JudgeCall``) may spend, given its request and the calls the
# chain's guards made so far (not yet charged): the limit in the way and why (it must
# not start), or the most output tokens its reply may have (``None``: no limit holds it).
Purse: TypeAlias = Callable[
    [ModelRequest, Sequence[ModelResponse], JudgeCall], tuple[BudgetLimit, str] | int | None
]


def unpriced_judge(warned: set[tuple[str, str]], call: JudgeCall) -> None:
    """A WARNING (once per run, for each guard and model: ``warned``) that ``call``'s
    model has no price under the run's money limit: it costs $0 there, silently else."""
    if (call.guard, call.model) in warned:
        return
    warned.add((call.guard, call.model))
    _log.warning(
        "guardrail %r asks model %r through judge(), and that model has no price: under "
        "the run's money limit (Budget.usd) its calls cost $0 and are not held to the money "
        "left; give the model a price (e.g. ScriptedModel(..., price=Price(input=3.0, "
        "output=15.0))), and name it on the guard (Guardrail(..., model=...)) so that "
        "Team(...) checks it",
        call.guard,
        call.model,
        extra={"guardrail": call.guard},
    )


@final
@dataclass(slots=True)
class Spend:
    """The model calls the guards of one chain made, and the guard judging now."""

    telemetry: Telemetry
    responses: list[ModelResponse] = field(default_factory=list)
    guard: str = ""
    role: str = ""  # whose call the guards judge (a step's: its worker)


# Which chain a guard's call belongs to: set by ``run_chain`` around its guards
# (a context variable, so concurrent chains in one run never mix their spending).
_CURRENT: ContextVar[Spend | None] = ContextVar("regiment_guard_spend", default=None)


# What the guards' calls may still spend: set around the tasks that run guard
# chains (a step's tool loop, the planner's calls and plan/answer checks).
_PURSE: ContextVar[Purse | None] = ContextVar("regiment_guard_purse", default=None)

# Where they are journaled and replayed from: set with the purse (``None``: nowhere).
_TAPE: ContextVar[JudgeTape | None] = ContextVar("regiment_guard_tape", default=None)


# What a reply the guards judge spent (not charged until they are done): a run's purse
# counts it (``judging_reply``; a step's purse is given it: ``step_purse(unpaid=...)``).
_UNPAID: ContextVar[Usage | None] = ContextVar("regiment_guard_unpaid", default=None)
_NONE = Usage()


@final
class judging_reply:  # lower case: used like a function, as ``judging_within``
    """Count ``usage`` (a planner-side reply its guards judge) in what the judges of
    this block may spend."""

    __slots__ = ("_token", "_usage")

    def __init__(self, usage: Usage) -> None:
        self._usage = usage
        self._token: Token[Usage | None] | None = None

    def __enter__(self) -> None:
        self._token = _UNPAID.set(self._usage)
        replied(self._usage)  # the call came back: cut while judged, it is charged at this

    def __exit__(self, *exc: object) -> None:
        if self._token is not None:
            _UNPAID.reset(self._token)


def spending() -> ContextVar[Spend | None]:
    return _CURRENT


@final
class judging_within:  # lower case: used like the function it was, ``with judging_within(...)``
    """Hold the guards' model calls made in this block (and in tasks started in it)
    to ``purse``, and journal them on ``tape`` (replay them from it on a resume).

    A class, not ``@contextmanager``: every planner-side model call enters one, and a
    generator-based manager costs a generator and three calls more each time.
    """

    __slots__ = ("_purse", "_tape", "_tape_token", "_token")

    def __init__(self, purse: Purse | None, tape: JudgeTape | None = None) -> None:
        self._purse = purse
        self._tape = tape
        self._token: Token[Purse | None] | None = None
        self._tape_token: Token[JudgeTape | None] | None = None

    def __enter__(self) -> None:
        self._token = _PURSE.set(self._purse)
        self._tape_token = _TAPE.set(self._tape)

    def __exit__(self, *exc: object) -> None:
        if self._tape_token is not None:
            _TAPE.reset(self._tape_token)
        if self._token is not None:
            _PURSE.reset(self._token)


def ledger_purse(ledger: BudgetLedger, pending: int = 0, top_ups: TopUps | None = None) -> Purse:
    """The run's budget as a purse; ``pending`` model calls are in flight, not yet charged.
    Under a money limit, a priced judge's call is held to the money left; an unpriced
    one's is not, and is named in a WARNING once per run. A nested run's (``top_ups``)
    draws what a call lacks through the step it serves (``afford``)."""

    def left(
        request: ModelRequest, made: Sequence[ModelResponse], call: JudgeCall
    ) -> tuple[BudgetLimit, str] | int | None:
        unpaid = _UNPAID.get() or _NONE  # a reply its guards judge, not charged till then
        spent = sum(r.usage.total_tokens for r in made) + unpaid.total_tokens
        estimate = estimate_tokens(request)
        needed = estimate + spent
        rates = call.rates if ledger.holds_money else None
        micro = sum(r.usage.micro_usd for r in made) + unpaid.micro_usd
        usd = 0 if rates is None else least_cost(rates, estimate) + micro
        limit = afford(
            ledger,
            top_ups,
            model_calls_needed=1 + pending + len(made),
            tokens_needed=needed,
            usd_needed=usd,
        )
        if limit is not None:
            return limit, f"the run's {limit} budget has none left"
        if ledger.holds_money and rates is None:
            if ledger.judges_warned is None:
                ledger.judges_warned = set()
            unpriced_judge(ledger.judges_warned, call)
        room = None
        if ledger.holds_replies:
            outputs = sum(r.usage.output_tokens for r in made) + unpaid.output_tokens
            room = ledger.reply_room(tokens_needed=needed, outputs_needed=outputs)
        if rates is not None:
            paid = reply_tokens(rates, (ledger.micro_usd_left() or 0) - micro, estimate)
            room = max(1, paid if room is None else min(room, paid))
        return room

    spent = ledger.spent  # a judge call cut in flight: billed, so counted, whatever the budget
    if top_ups is None or top_ups.above is None:
        return cut_charged(left, spent)
    return _NestedPurse(left, ledger, top_ups, spent)


@final
class _NestedPurse:
    """A nested run's purse: a judge call it refuses may wait for the run above to give
    back (``more``), as the nested run's own calls do (``_nested_afford.waited``)."""

    __slots__ = ("_ledger", "_left", "_top_ups", "spent")

    def __init__(
        self, left: Purse, ledger: BudgetLedger, top_ups: TopUps, spent: Spent | None
    ) -> None:
        self._left, self._ledger, self._top_ups = left, ledger, top_ups
        self.spent = spent  # charged with a judge call cut in flight, if any

    def __call__(
        self, request: ModelRequest, made: Sequence[ModelResponse], call: JudgeCall
    ) -> tuple[BudgetLimit, str] | int | None:
        return self._left(request, made, call)

    async def more(self) -> bool:
        """Wait for a give-back in the tree of runs, if one may come: ask again then."""
        return await waited(self._ledger, self._top_ups)


async def judge(model: Model, request: ModelRequest) -> ModelResponse:
    """Call ``model`` from inside a guardrail (an LLM-as-judge).

    The call is a ``chat`` span of the run's trace, and its usage and the call
    itself count against the run's budget (the step's share, inside a step); its reply
    is held (``max_tokens``) to the output tokens that budget has left. Its reply is
    journaled with the run: a resumed run replays it rather than asking again.
    Outside a guardrail it is a plain, untraced call.

    A call that fails having spent tokens (a refused reply, ``ModelRefused``; a
    stream that broke) is charged all the same, and its error passes on; it is
    journaled too, and a resumed run raises it to the guard again.

    Raises:
        BudgetExceeded: the budget has nothing left for the call; the model is not
            called, and the guard trips with this reason unless it catches it.
    """
    spend = _CURRENT.get()
    if spend is None:
        return await model.complete(request)
    tape = _TAPE.get()
    key = None if tape is None else tape.key(request)
    if tape is not None and key is not None and (replayed := tape.again(key, spend)) is not None:
        return replayed
    caller = ModelCaller(model, "guardrail", spend.telemetry)
    price = caller.price
    who = JudgeCall(spend.guard, model.name, None if price is None else price.rates())
    while True:
        try:
            request = _held(caller, request, spend, who)
            break
        except BudgetExceeded:  # a nested run's judge waits for the run above to give back
            if not isinstance(purse := _PURSE.get(), _NestedPurse) or not await purse.more():
                raise
    if tape is not None and key is not None:
        await tape.begun(key, spend.role, caller, request)
    # inside a planner-side call: watched with it (cut with it, charged with it)
    watched = judge_sent(key or f"guard/{spend.guard}", spend.role, caller, request)
    try:
        response = await caller.call(request)
    except get_cancelled_exc_class():  # cut in flight: billed all the same
        if watched is None:
            _cut(spend, key, caller, request)
        else:
            judge_done(watched, cut=True)
        raise
    except ModelError as exc:  # a refused reply, a broken stream: billed all the same
        judge_done(watched, usage=exc.usage, calls=exc.model_calls)
        charge_failed(spend.responses, exc)
        if tape is not None and key is not None:  # closes its intent: a resume raises it again
            await tape.record(key, *failure(exc))
        raise
    judge_done(watched, usage=response.usage)  # cut before its chain is done: charged
    spend.responses.append(response)
    if tape is not None and key is not None:
        await tape.record(key, response)
    return response


def charged(responses: tuple[ModelResponse, ...]) -> tuple[ModelResponse, ...]:
    """``responses``, a step's chain's judge replies it charges now: the replayed ones
    among them are taken from here (``JudgeTape.charged``), not charged again."""
    if responses and (tape := _TAPE.get()) is not None:
        for response in responses:
            tape.charged(response)
    return responses


def unreplayed(responses: list[ModelResponse]) -> list[ModelResponse]:
    """A cut chain's judge ``responses`` its cut charges: not the replayed ones, which the
    step's report or the run's end charges (``JudgeTape.unreplayed``)."""
    tape = _TAPE.get()
    return responses if tape is None else tape.unreplayed(responses)


def _cut(spend: Spend, key: str | None, caller: ModelCaller, request: ModelRequest) -> None:
    """A judge call cut in flight: its run (in this process) charges it at its most, to
    the role whose call its guard judged, if its purse says where (``cut_charged``)."""
    if (spent := purse_spent()) is not None:
        judge_cut(spent, key or f"guard/{spend.guard}", spend.role, caller, request)


def purse_spent() -> Spent | None:
    """Where the run (in this process) charges its guards' judge calls cut in flight."""
    purse = _PURSE.get()
    return purse.spent if isinstance(purse, (Charging, _NestedPurse)) else None


def _held(caller: ModelCaller, request: ModelRequest, spend: Spend, who: JudgeCall) -> ModelRequest:
    """``request`` with its reply held to what the purse has left (``ModelCaller.capped``).

    Raises:
        BudgetExceeded: nothing is left for it, or too little for a call that thinks.
    """
    purse = _PURSE.get()
    verdict = None if purse is None else purse(request, tuple(spend.responses), who)
    if isinstance(verdict, tuple):
        limit, why = verdict
        raise BudgetExceeded(
            f"the guardrail's judge call was not made: {why}; raise the budget, "
            "or let the guard decide without a model",
            limit=limit,
        )
    if verdict is None:
        return request
    held = caller.capped(request, verdict)
    if held is None:
        raise BudgetExceeded(
            f"the guardrail's judge call was not made: the budget has {verdict} tokens left "
            "for its reply, too few for a call that thinks (thinking_budget is at least "
            "1024, and below max_tokens); raise the budget, or let the guard decide "
            "without a model",
            limit="output_tokens",
        )
    return held
