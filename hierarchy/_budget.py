"""Budgets: what a run may spend, and the ledger that keeps a fan-out honest.

The planner reserves each step's share *before* it dispatches the step, so
steps that run at the same time cannot overshoot a limit together; the step's
report then settles the reservation with what was really spent.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, TypeAlias, final

import msgspec

from regiment.hierarchy._messages import StepAllowance
from regiment.hierarchy._ranges import NO_LIMIT, at_least, seconds
from regiment.models import Usage

__all__ = ("Budget", "BudgetLedger", "BudgetLimit", "OnExhausted")

BudgetLimit: TypeAlias = Literal[
    "model_calls", "tool_calls", "tokens", "input_tokens", "output_tokens", "replans", "wall_clock"
]
OnExhausted: TypeAlias = Literal["partial", "raise"]


class Budget(msgspec.Struct, frozen=True, kw_only=True):
    """Limits for one run. ``None`` means unlimited; a limit of 0 allows none.

    Counts are whole numbers >= 0 (``rounds`` >= 1); ``wall_clock`` is a finite
    number of seconds > 0. Other values raise :class:`regiment.ConfigError`.

    Attributes:
        model_calls: model calls by every role (planner, workers, synthesis).
        tool_calls: tool calls by every worker.
        tokens: input + output tokens over all model calls.
        input_tokens: input tokens over all model calls.
        output_tokens: output tokens over all model calls.
        replans: how many times the plan may be replaced.
        rounds: how many plan-execute-critique rounds a run may take (with a critic).
        wall_clock: seconds from the start of the run.
        on_exhausted: ``"partial"`` ends the run with a partial result marked
            as such; ``"raise"`` raises :class:`regiment.BudgetExceeded`.
    """

    model_calls: int | None = None
    tool_calls: int | None = None
    tokens: int | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    replans: int = 3
    rounds: int = 3
    wall_clock: float | None = None
    on_exhausted: OnExhausted = "partial"

    def __post_init__(self) -> None:
        for name in ("model_calls", "tool_calls", "tokens", "input_tokens", "output_tokens"):
            at_least("Budget", name, getattr(self, name), 0, none_means=NO_LIMIT)
        at_least("Budget", "replans", self.replans, 0)
        at_least("Budget", "rounds", self.rounds, 1)
        seconds("Budget", "wall_clock", self.wall_clock)


def _left(limit: int | None, used: int) -> int | None:
    return None if limit is None else max(0, limit - used)


def _share(left: int | None, cap: int | None, ways: int) -> int | None:
    if left is None:
        return cap
    share = left // max(1, ways)
    return share if cap is None else min(share, cap)


@dataclass(slots=True)
class _Spent:
    model_calls: int = 0
    tool_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0


@dataclass(slots=True)
class _Reserved:
    model_calls: int = 0
    tool_calls: int = 0
    tokens: int = 0


@final
@dataclass(slots=True)
class BudgetLedger:
    """Spent and reserved amounts for one run, checked against a :class:`Budget`.

    Only the run's planner touches its ledger, so it needs no lock.
    """

    budget: Budget
    spent: _Spent = field(default_factory=_Spent)
    reserved: dict[str, StepAllowance] = field(default_factory=dict)
    replans: int = 0
    # Running totals of ``reserved``: summing it per dispatch made a fan-out quadratic.
    _totals: _Reserved = field(default_factory=lambda: _Reserved())

    def _tokens_spent(self) -> int:
        return self.spent.input_tokens + self.spent.output_tokens

    def exhausted(self, *, model_calls_needed: int = 1) -> BudgetLimit | None:
        """The first limit that leaves less than what one more model call needs."""
        b = self.budget
        calls_left = _left(b.model_calls, self.spent.model_calls + self._totals.model_calls)
        if calls_left is not None and calls_left < model_calls_needed:
            return "model_calls"
        reserved_tokens = self._totals.tokens
        if b.tokens is not None and self._tokens_spent() + reserved_tokens >= b.tokens:
            return "tokens"
        if b.input_tokens is not None and self.spent.input_tokens >= b.input_tokens:
            return "input_tokens"
        if b.output_tokens is not None and self.spent.output_tokens >= b.output_tokens:
            return "output_tokens"
        return None

    def reserve(
        self, key: str, *, ways: int, model_calls_cap: int, keep_model_calls: int = 0
    ) -> StepAllowance | None:
        """Reserve one step's share of what is left, split ``ways`` ways.

        Args:
            key: identifies the reservation (run-unique step key).
            ways: how many steps are being dispatched together; tool calls and
                tokens are split evenly between them.
            model_calls_cap: the most model calls the step can use (its iteration cap);
                model calls are reserved first come, first served up to this cap.
            keep_model_calls: model calls to keep back for later phases (synthesis).

        Returns:
            The allowance, or ``None`` when there is not enough left for even one
            model call (the caller then waits for running steps or stops).
        """
        b = self.budget
        calls_left = _left(
            b.model_calls,
            self.spent.model_calls + self._totals.model_calls + keep_model_calls,
        )
        # Model calls go first come, first served up to the step's cap: an even
        # split could leave every parallel step too few calls to finish.
        calls = model_calls_cap if calls_left is None else min(model_calls_cap, calls_left)
        if calls < 1:
            return None
        tools_left = _left(b.tool_calls, self.spent.tool_calls + self._totals.tool_calls)
        tokens_left = _left(b.tokens, self._tokens_spent() + self._totals.tokens)
        if tokens_left == 0:
            return None
        allowance = StepAllowance(
            model_calls=calls,
            tool_calls=_share(tools_left, None, ways),
            tokens=_share(tokens_left, None, ways),
        )
        self.release(key)  # a key reserved twice replaces its old reservation
        self.reserved[key] = allowance
        self._count(allowance, 1)
        return allowance

    def release(self, key: str) -> None:
        """Drop a reservation (the step reported, was cancelled, or was never sent)."""
        allowance = self.reserved.pop(key, None)
        if allowance is not None:
            self._count(allowance, -1)

    def _count(self, allowance: StepAllowance, sign: int) -> None:
        totals = self._totals
        totals.model_calls += sign * (allowance.model_calls or 0)
        totals.tool_calls += sign * (allowance.tool_calls or 0)
        totals.tokens += sign * (allowance.tokens or 0)

    def charge(self, *, usage: Usage, model_calls: int = 0, tool_calls: int = 0) -> None:
        """Record what was really spent."""
        self.spent.model_calls += model_calls
        self.spent.tool_calls += tool_calls
        self.spent.input_tokens += usage.input_tokens
        self.spent.output_tokens += usage.output_tokens

    def can_replan(self) -> bool:
        """Whether another plan version is allowed."""
        return self.replans < self.budget.replans
