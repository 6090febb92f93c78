"""Budgets: what a run may spend, and the ledger that keeps a fan-out honest.

The planner reserves each step's share *before* it dispatches the step, so
steps that run at the same time cannot overshoot a limit together; the step's
report then settles the reservation with what was really spent. A step in flight
whose share runs short may have its reservation grown (``grow``: a top-up, under the
rule in :mod:`regiment.hierarchy._top_up`), never past what the budget has left.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import TYPE_CHECKING, Literal, NamedTuple, TypeAlias, final, get_args

import msgspec

from regiment._misuse import ConfigStruct

if TYPE_CHECKING:
    import anyio

from regiment.hierarchy._allowance import over_allowance
from regiment.hierarchy._messages import BudgetLimit, StepAllowance
from regiment.hierarchy._ranges import NO_LIMIT, InvalidValue, at_least, seconds
from regiment.hierarchy._spent import Spent

__all__ = ("Budget", "BudgetLedger", "BudgetLimit", "OnExhausted", "Share", "over_allowance")

OnExhausted: TypeAlias = Literal["partial", "raise"]
_MOST_USD = 1e12  # kept in micro-dollars as an int, so no float overflows on the way


class Budget(ConfigStruct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Limits for one run. ``None`` means unlimited; a limit of 0 allows none.

    A team file's ``[budget]`` table decodes straight into this type (unknown
    keys are refused there, as in every other table).

    Counts are whole numbers >= 0 (``rounds`` >= 1); ``wall_clock`` is a finite
    number of seconds > 0. Other values raise :class:`regiment.ConfigError`.

    Attributes:
        model_calls: model calls by every role (planner, workers, synthesis).
        tool_calls: tool calls by every worker.
        tokens: input + output tokens over all model calls (``Usage.total_tokens``:
            input read from or written to the prompt cache counts too).
        input_tokens: input tokens over all model calls, cached ones included.
        output_tokens: output tokens over all model calls. With this (or ``tokens``)
            set, each call's ``max_tokens`` is lowered to what is left for its reply
            (its step's share, or the run's unheld rest), so steps at width hold it.
        usd: US dollars over all model calls, at each model's ``Price`` (every model of
            the team needs one: a ``ConfigError`` at team start names one without).
            Held as ``output_tokens`` is: each call's reply is held to what its step's
            share (or the run) has left at its model's output price, and every
            response's cost (``Usage.micro_usd``) is charged. Kept in micro-dollars.
        replans: how many times the plan may be replaced.
        rounds: how many plan-execute-critique rounds a run may take (with a critic).
        wall_clock: seconds from the start of the run, not counting the time calls
            wait for an approval decision (the clock stands still meanwhile).
        on_exhausted: ``"partial"`` ends the run with a partial result marked
            as such; ``"raise"`` raises :class:`regiment.BudgetExceeded`.
    """

    model_calls: int | None = None
    tool_calls: int | None = None
    tokens: int | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    usd: float | None = None
    replans: int = 3
    rounds: int = 3
    wall_clock: float | None = None
    on_exhausted: OnExhausted = "partial"

    def __post_init__(self) -> None:
        for name in ("model_calls", "tool_calls", "tokens", "input_tokens", "output_tokens"):
            at_least("Budget", name, getattr(self, name), 0, none_means=NO_LIMIT)
        if self.usd is not None and (
            isinstance(self.usd, bool)
            or not isinstance(self.usd, int | float)
            or not 0 <= self.usd <= _MOST_USD
        ):
            raise InvalidValue(
                "Budget", "usd", f"must be a number of US dollars from 0 to 1e12; got {self.usd!r}"
            )
        at_least("Budget", "replans", self.replans, 0)
        at_least("Budget", "rounds", self.rounds, 1)
        seconds("Budget", "wall_clock", self.wall_clock)
        if self.on_exhausted not in get_args(OnExhausted):
            raise InvalidValue(
                "Budget", "on_exhausted", f"must be 'partial' or 'raise'; got {self.on_exhausted!r}"
            )

    def __repr__(self) -> str:  # the limits set, not ten fields of which most are defaults
        fields = msgspec.structs.fields(self)
        set_ = [
            f"{f.name}={getattr(self, f.name)!r}"
            for f in fields
            if getattr(self, f.name) != f.default
        ]
        return f"Budget({', '.join(set_)})"


def _left(limit: int | None, used: int) -> int | None:
    return None if limit is None else max(0, limit - used)


class Share(NamedTuple):
    """One step's part of a fan-out: tool calls and tokens (``None``: unlimited)."""

    tool_calls: int | None
    tokens: int | None
    input_tokens: int | None = None
    output_tokens: int | None = None
    micro_usd: int | None = None


_UNLIMITED = Share(None, None)


def _split(left: int | None, ways: int, first: int) -> list[int | None]:
    """The first ``first`` of ``left`` in ``ways`` parts (differing by one at most, larger first)."""
    if left is None:
        return [None] * first
    base, extra = divmod(left, ways)
    return [base + (1 if i < extra else 0) for i in range(first)]


class _Held:
    """Running totals of what a ledger's reservations hold, so each reservation and
    release is O(1) (summing the reservations per dispatch made a fan-out quadratic)."""

    __slots__ = ("_inputs", "_micro", "_model_calls", "_outputs", "_tokens", "_tool_calls")

    def __init__(self) -> None:
        self._model_calls = self._tool_calls = self._tokens = self._inputs = self._outputs = 0
        self._micro = 0  # micro-dollars

    def _hold(self, held: StepAllowance, sign: int = 1) -> None:
        """Add what ``held`` holds to the totals (``sign`` -1: take it away)."""
        self._model_calls += sign * (held.model_calls or 0)
        self._tool_calls += sign * (held.tool_calls or 0)
        self._tokens += sign * (held.tokens or 0)
        self._inputs += sign * (held.input_tokens or 0)
        self._outputs += sign * (held.output_tokens or 0)
        self._micro += sign * (held.micro_usd or 0)


@final
class BudgetLedger(_Held):
    """Spent and reserved amounts for one run, checked against a :class:`Budget`.

    Only the run's planner touches its ledger, so it needs no lock. It keeps running
    totals of what is reserved (``_Held``), and a budget with no tool-call, token or
    money limit has nothing to split.
    """

    __slots__ = (
        "_limited",
        "_shared",
        "_usd",
        "budget",
        "counts_tokens",
        "free",
        "given_back",
        "holds_money",
        "holds_replies",
        "judges_warned",
        "replans",
        "reserved",
        "root",
        "spent",
    )

    def __init__(self, budget: Budget) -> None:
        self.budget = b = budget
        self.spent = Spent()  # what was really spent (and by whom): charged there
        self.reserved: dict[Hashable, StepAllowance] = {}  # key (version, step, attempt)
        self.replans = 0
        super().__init__()  # the running totals of ``reserved``
        # The money limit in micro-dollars (``None``: none).
        self._usd = None if b.usd is None else round(b.usd * 1_000_000)
        # Whether a fan-out has anything to split (else every share is unlimited).
        # Spelled out, not any() over a generator: every run makes a ledger.
        self._shared = not (
            b.tool_calls is None
            and b.tokens is None
            and b.input_tokens is None
            and b.output_tokens is None
            and b.usd is None
        )
        # Whether a call's estimated input tokens matter to :meth:`exhausted`.
        self.counts_tokens = budget.tokens is not None or budget.input_tokens is not None
        # Whether a call's reply is held to what is left (:meth:`reply_room`).
        self.holds_replies = budget.tokens is not None or budget.output_tokens is not None
        self.holds_money = budget.usd is not None  # and to what its money pays for
        self.judges_warned: set[tuple[str, str]] | None = None  # unpriced judges named
        # Whether :meth:`exhausted` has any limit to check (none by default).
        self._limited = self.counts_tokens or not (
            budget.model_calls is None and budget.output_tokens is None and budget.usd is None
        )
        # No count limit (the default): each step gets its cap's shared allowance, untracked.
        self.free: dict[int, StepAllowance] | None = None if self._limited or self._shared else {}
        self.given_back: anyio.Event | None = None  # set as a step gives its share back
        self.root: BudgetLedger | None = None  # a nested run's: its tree's top (no cycle)

    def exhausted(
        self, *, model_calls_needed: int = 1, tokens_needed: int = 0, usd_needed: int = 0
    ) -> BudgetLimit | None:
        """The first limit that leaves less than what one more model call needs.

        Args:
            model_calls_needed: model calls that must be left.
            tokens_needed: the next call's estimated input tokens; at least one
                token must be left either way.
            usd_needed: what the next call costs at least, in micro-dollars (its
                estimated input and one output token); at least 1 must be left.
        """
        if not self._limited:
            return None
        b = self.budget
        calls_left = _left(b.model_calls, self.spent.model_calls + self._model_calls)
        if calls_left is not None and calls_left < model_calls_needed:
            return "model_calls"
        needed = max(1, tokens_needed)
        tokens_left = self._left_tokens()  # the input and one output token
        if tokens_left is not None and tokens_left < tokens_needed + 1:
            return "tokens"
        inputs_left = self._left_inputs()
        if inputs_left is not None and inputs_left < needed:
            return "input_tokens"
        if self._left_outputs() == 0:
            return "output_tokens"
        micro_left = self.micro_usd_left()
        if micro_left is not None and micro_left < max(1, usd_needed):
            return "usd"
        return None

    def reply_room(self, tokens_needed: int = 0, outputs_needed: int = 0) -> int | None:
        """The most output tokens the next run-level call's reply may have: what is left
        (neither spent nor held by a step in flight) of ``output_tokens`` less
        ``outputs_needed`` (spent, not yet charged), and of ``tokens`` less the call's
        estimated input ``tokens_needed``; at least 1 (a call that has no room is refused
        by :meth:`exhausted` first). ``None``: no such limit."""
        outputs, tokens = self._left_outputs(), self._left_tokens()
        if outputs is not None:
            outputs -= outputs_needed
        if tokens is not None:
            tokens -= tokens_needed
            outputs = tokens if outputs is None else min(outputs, tokens)
        return None if outputs is None else max(1, outputs)

    def split(self, ways: int, first: int | None = None) -> list[Share]:
        """Split what is left now between ``ways`` steps dispatched together.

        The shares are fixed when the fan-out begins (reserving one step's share
        does not shrink the next one's), differ by at most one, and add up to
        what was left: a budget that covers every step starves none of them.
        ``first``: only the first so many (the steps sent now; the rest are to come, #22).
        """
        first = ways if first is None else max(0, min(first, ways))
        if ways < 1:
            return []
        if not self._shared:
            return [_UNLIMITED] * first  # nothing to split: the per-step path stays cheap
        tools = _split(self._left_tool_calls(), ways, first)
        tokens = _split(self._left_tokens(), ways, first)
        inputs = _split(self._left_inputs(), ways, first)
        outputs = _split(self._left_outputs(), ways, first)
        micro = _split(self.micro_usd_left(), ways, first)
        return [Share(*parts) for parts in zip(tools, tokens, inputs, outputs, micro, strict=True)]

    def _left_tool_calls(self) -> int | None:
        return _left(self.budget.tool_calls, self.spent.tool_calls + self._tool_calls)

    def _left_tokens(self) -> int | None:
        s = self.spent
        return _left(self.budget.tokens, s.input_tokens + s.output_tokens + self._tokens)

    def _left_inputs(self) -> int | None:
        return _left(self.budget.input_tokens, self.spent.input_tokens + self._inputs)

    def _left_outputs(self) -> int | None:
        return _left(self.budget.output_tokens, self.spent.output_tokens + self._outputs)

    def micro_usd_left(self) -> int | None:
        """Micro-dollars neither spent nor held by a step in flight (``None``: no limit)."""
        return _left(self._usd, self.spent.micro_usd + self._micro)

    def reserve(
        self,
        key: Hashable,
        *,
        model_calls_cap: int,
        keep_model_calls: int = 0,
        share: Share | None = None,
    ) -> StepAllowance | None:
        """Reserve one step's allowance.

        Args:
            key: identifies the reservation (run-unique step key).
            model_calls_cap: the most model calls the step can use (its iteration cap);
                model calls are reserved first come, first served up to this cap.
            keep_model_calls: model calls to keep back for later phases (synthesis).
            share: the step's tool calls and tokens, from :meth:`split`; ``None``
                reserves everything that is left.

        Returns:
            The allowance, or ``None`` when there is not enough left for even one
            model call (the caller then waits for running steps or stops).
        """
        if (free := self.free) is not None:  # nothing to hold back: the per-step path
            if (allowance := free.get(model_calls_cap)) is None and model_calls_cap >= 1:
                allowance = free[model_calls_cap] = StepAllowance(model_calls=model_calls_cap)
            return allowance  # (None for a cap below 1: never kept)
        limit = self.budget.model_calls
        # Model calls go first come, first served up to the step's cap: an even
        # split could leave every parallel step too few calls to finish.
        calls = model_calls_cap
        if limit is not None:
            left = limit - self.spent.model_calls - self._model_calls - keep_model_calls
            calls = min(calls, left)
        if calls < 1:
            return None
        if share is None:
            share = self.split(1)[0] if self._shared else _UNLIMITED
        tool_calls, tokens, inputs, outputs, micro = share
        if tokens == 0 or inputs == 0 or outputs == 0 or micro == 0:
            return None
        allowance = StepAllowance(
            model_calls=calls,
            tool_calls=tool_calls,
            tokens=tokens,
            input_tokens=inputs,
            output_tokens=outputs,
            micro_usd=micro,
        )
        if key in self.reserved:
            self.release(key)  # a key reserved twice replaces its old reservation
        self.reserved[key] = allowance
        self._hold(allowance)
        return allowance

    def release(self, key: Hashable) -> None:
        """Drop a reservation (the step reported, was cancelled, or was never sent)."""
        allowance = self.reserved.pop(key, None)
        if allowance is not None:
            self._hold(allowance, -1)
            if (self.root or self).given_back is not None:
                self.given_back_now()

    def given_back_now(self) -> None:
        """Wake the steps waiting for a top-up anywhere in its tree of runs: ask again."""
        root = self.root or self
        given_back, root.given_back = root.given_back, None
        if given_back is not None:
            given_back.set()

    def room(self, name: str) -> tuple[int, int] | None:
        """What is left of budget field ``name`` (a :class:`StepAllowance` field): not
        spent, and of that not reserved either; ``None`` when the field has no limit."""
        limit: int | None = self._usd if name == "micro_usd" else getattr(self.budget, name)
        if limit is None:
            return None
        s = self.spent
        spent, held = {
            "model_calls": (s.model_calls, self._model_calls),
            "tool_calls": (s.tool_calls, self._tool_calls),
            "tokens": (s.input_tokens + s.output_tokens, self._tokens),
            "input_tokens": (s.input_tokens, self._inputs),
            "output_tokens": (s.output_tokens, self._outputs),
            "micro_usd": (s.micro_usd, self._micro),
        }[name]
        unspent = max(0, limit - spent)
        return unspent, max(0, unspent - held)

    def grow(self, key: Hashable, extra: dict[str, int]) -> StepAllowance | None:
        """Add ``extra`` (field -> amount) to the reservation under ``key``, a top-up for
        a step in flight; its new allowance (``None``: no such reservation)."""
        if (held := self.reserved.get(key)) is None:
            return None
        fields = {name: (getattr(held, name) or 0) + n for name, n in extra.items()}
        grown = msgspec.structs.replace(held, **fields)
        self._hold(held, -1)  # not ``release``: nothing is given back
        self.reserved[key] = grown
        self._hold(grown)
        return grown

    def widen(self, name: str, by: int) -> None:
        """Raise field ``name``'s limit by ``by`` (a nested run's, as its step is topped up)."""
        money = name == "micro_usd"  # kept in micro-dollars, a Budget's usd in dollars
        grown: int = ((self._usd or 0) if money else getattr(self.budget, name)) + by
        self._usd = grown if money else self._usd
        field, value = ("usd", grown / 1_000_000) if money else (name, grown)
        self.budget = msgspec.structs.replace(self.budget, **{field: value})

    def can_replan(self) -> bool:
        """Whether another plan version is allowed."""
        return self.replans < self.budget.replans
