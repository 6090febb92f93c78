"""The synthesis asked again (an empty answer; a structured answer cut short or not
valid), held to the budget as its first ask was.

The first ask is checked and its reply held (``max_tokens``) to what the run has
left when it starts (``PhaseCalls.start``). What it spent is charged only once the
synthesis is done, so the ask after it must count that spend itself: it starts only
if the run still has a model call, tokens and money for it once the earlier asks are
counted, and its reply is held to what is left after them. Without that, each ask
could spend up to what was left once more.

An ask the run cannot pay for is not made, and the budget stops the run there, as any
budget stop does: the planner reads ``Reasks.unpaid`` and ends the run ``partial`` (or
raises ``BudgetExceeded``) naming the limit, rather than take the empty (or invalid)
reply as the answer.
"""

from __future__ import annotations

from typing import NamedTuple, final

import msgspec

from regiment._json import JsonObject
from regiment.hierarchy._allowance import Rates
from regiment.hierarchy._budget import BudgetLedger, BudgetLimit
from regiment.hierarchy._cut_calls import asked_again
from regiment.hierarchy._in_flight import Started
from regiment.hierarchy._model_call import ModelCaller
from regiment.hierarchy._top_up import TopUps, afford
from regiment.models import ModelRequest, Usage, estimate_tokens, least_cost, reply_tokens

__all__ = ("Reasks", "Unpaid", "held_limit")


class Unpaid(NamedTuple):
    """An ask the run's budget cannot pay for: the limit in the way, and why."""

    limit: BudgetLimit
    why: str

    def journaled(self) -> JsonObject:
        """As the journal keeps it with the synthesis' reply (a resume ends on it too)."""
        return {"limit": self.limit, "why": self.why}

    @classmethod
    def of(cls, journaled: JsonObject | None) -> Unpaid | None:
        """What :meth:`journaled` wrote (``None``: the answer was asked again or kept)."""
        if journaled is None:
            return None
        limit = msgspec.convert(journaled.get("limit"), BudgetLimit)
        return cls(limit, str(journaled.get("why", "")))

    def detail(self, answer: str) -> str:
        """Why the run ends here, its synthesizer's last ``answer`` being the one kept."""
        what = "not valid" if answer.strip() else "empty"
        return f"the synthesizer's answer was {what}, and {self.why}"


@final
class Reasks:
    """Holds a synthesis' later asks to what its run's ``ledger`` has left.

    Attributes:
        unpaid: set when an ask was not made for want of budget (the run then ends on it).
    """

    __slots__ = ("_caller", "_ledger", "_rates", "_started", "_top_ups", "unpaid")

    def __init__(
        self,
        ledger: BudgetLedger,
        caller: ModelCaller,
        top_ups: TopUps | None = None,
        started: Started | None = None,
    ) -> None:
        self._ledger = ledger
        self._started = started  # a journaled run's: each ask's intent, before it is sent
        self._top_ups = top_ups  # a nested run's: it draws what an ask lacks from above
        self._caller = caller  # the synthesizer's: its settings, its model's price
        price = caller.price if ledger.holds_money else None
        self._rates: Rates | None = None if price is None else price.rates()
        self.unpaid: Unpaid | None = None

    async def asking(self, request: ModelRequest, ask: int) -> None:
        """The ``ask``-th ask (2, ...) is about to be sent: a journaled run under a
        spending budget journals its intent first, as it did the first's (a crash while
        it is in flight: the resume charges it at its most, as the first)."""
        if (started := self._started) is not None:
            await started("synthesis", "synthesizer", self._caller, request, ask)

    def held(self, request: ModelRequest, spent: Usage, calls: int) -> ModelRequest | Unpaid:
        """``request`` (the ask after ``calls`` asks that spent ``spent``, not yet
        charged) with its reply held to what the run has left after them; or why the
        run cannot pay for it (then it is not made, and ``unpaid`` says so)."""
        held = self._held(request, spent, calls)
        if isinstance(held, Unpaid):
            self.unpaid = held
        else:  # cut while it is asked, what the earlier asks spent is charged too
            asked_again(held, spent, calls)
        return held

    def _held(self, request: ModelRequest, spent: Usage, calls: int) -> ModelRequest | Unpaid:
        ledger, rates = self._ledger, self._rates
        needed = estimate_tokens(request)
        usd_needed = 0 if rates is None else least_cost(rates, needed) + spent.micro_usd
        limit = afford(
            ledger,
            self._top_ups,
            model_calls_needed=calls + 1,
            tokens_needed=needed + spent.total_tokens,
            usd_needed=usd_needed,
        )
        if limit is None and ledger.holds_replies:
            outputs = ledger.room("output_tokens")
            if outputs is not None and outputs[1] - spent.output_tokens <= 0:
                limit = "output_tokens"
        if limit is not None:
            why = f"the run's {limit} budget has nothing left to ask again once the first ask is counted"
            return Unpaid(limit, why)
        if not ledger.holds_replies and rates is None:
            return request
        room = ledger.reply_room(needed + spent.total_tokens, spent.output_tokens)
        if rates is not None:
            left = (ledger.micro_usd_left() or 0) - spent.micro_usd
            paid = reply_tokens(rates, left, needed)
            room = paid if room is None else min(room, paid)
        held = self._caller.capped(request, room)
        if held is None:
            return Unpaid(
                held_limit(ledger),
                f"the run has {room} tokens left to ask again, too few for a call that "
                "thinks (thinking_budget is at least 1024, and below max_tokens)",
            )
        return held


def held_limit(ledger: BudgetLedger) -> BudgetLimit:
    """The limit that held a thinking call's reply to too little room to think in."""
    budget = ledger.budget
    if budget.output_tokens is not None:
        return "output_tokens"
    return "usd" if budget.tokens is None else "tokens"
