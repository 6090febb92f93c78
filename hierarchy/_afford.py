"""What a run's own model call may draw: ``afford`` (see ``_top_up``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from regiment.hierarchy._budget import Budget, BudgetLedger, BudgetLimit
from regiment.models import usd_text

if TYPE_CHECKING:
    from regiment.hierarchy._top_up import TopUps

__all__ = ("afford", "budget_field", "refused_detail")


def afford(
    ledger: BudgetLedger,
    top_ups: TopUps | None,
    *,
    model_calls_needed: int = 1,
    tokens_needed: int = 0,
    usd_needed: int = 0,
) -> BudgetLimit | None:
    """``ledger.exhausted(...)`` for a run's own model call (planner, critic, compressor,
    synthesis, their judges); in a nested run (``top_ups.above``), a limit in the way
    first draws what the call lacks through the step the run serves, as that run's
    steps do, and the limit is checked again. The limit that still stops it, if any."""
    needs = (model_calls_needed, tokens_needed, usd_needed)
    limit = ledger.exhausted(
        model_calls_needed=model_calls_needed, tokens_needed=tokens_needed, usd_needed=usd_needed
    )
    drawn: set[str] = set()  # each field once: what it got is what the rule allows
    while limit is not None and top_ups is not None and top_ups.above is not None:
        name = "micro_usd" if limit == "usd" else limit
        room = ledger.room(name) if name not in drawn else None
        if room is None:
            return limit
        drawn.add(name)
        short = _needed(name, needs) - room[1]
        if short <= 0 or top_ups.draw_above(ledger, name, short) < short:
            return limit
        limit = ledger.exhausted(
            model_calls_needed=model_calls_needed,
            tokens_needed=tokens_needed,
            usd_needed=usd_needed,
        )
    return limit


def _needed(name: str, needs: tuple[int, int, int]) -> int:
    """What a call needs left of budget field ``name`` (as ``BudgetLedger.exhausted``
    checks it) to start: its model calls, estimated input (and one output token of
    ``tokens``), least cost; one output token."""
    model_calls, tokens, micro = needs
    if name == "model_calls":
        return model_calls
    if name == "micro_usd":
        return max(1, micro)
    if name == "tokens":
        return tokens + 1  # its input and one output token
    return 1 if name == "output_tokens" else max(1, tokens)


def budget_field(budget: Budget, name: str) -> int | None:
    """Budget field ``name`` (``micro_usd``: ``usd`` in micro-dollars)."""
    if name == "micro_usd":
        return None if budget.usd is None else round(budget.usd * 1_000_000)
    limit: int | None = getattr(budget, name)
    return limit


def refused_detail(ledger: BudgetLedger, limit: BudgetLimit, tokens: int, usd: int) -> str:
    """What a call refused for ``limit`` needed (``tokens`` estimated input, ``usd`` least
    cost), and what the run had left of it not held by steps in flight."""
    if limit == "usd":
        money = usd_text(ledger.micro_usd_left() or 0)
        return f": it costs at least about {usd_text(max(1, usd))}, and {money} is left"
    if limit in ("tokens", "input_tokens"):
        room = ledger.room(limit)
        left = 0 if room is None else room[1]
        return f": it needs about {tokens} {limit.replace('_', ' ')}, and {left} are left"
    return ""
