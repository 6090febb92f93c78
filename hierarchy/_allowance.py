"""A step's allowance, checked before each of its model calls: what must stop it."""

from __future__ import annotations

from typing import TypeAlias

from regiment.hierarchy._messages import BudgetLimit, StepAllowance
from regiment.models import ModelRequest, Usage, estimate_tokens, least_cost, usd_text

__all__ = ("Rates", "over_allowance")

Rates: TypeAlias = tuple[int, int, int, int]
"""A model's ``Price.rates()``."""


def over_allowance(
    allowance: StepAllowance,
    model_calls: int,
    usage: Usage,
    request: ModelRequest,
    call: str,
    rates: Rates | None = None,
) -> tuple[BudgetLimit, str] | None:
    """Why a step's next model call (``request``, described as ``call``) must not start,
    after ``model_calls`` calls that spent ``usage``: no model call or output token left,
    or its estimated input does not fit in the tokens (all, or input) left. So a step
    goes over a token share by at most one reply, which ``max_tokens`` bounds."""
    if allowance.model_calls is not None and model_calls >= allowance.model_calls:
        return (
            "model_calls",
            f"the step's model call allowance of {allowance.model_calls} is used up",
        )
    tokens, inputs, outputs = allowance.tokens, allowance.input_tokens, allowance.output_tokens
    if outputs is not None and usage.output_tokens >= outputs:
        return "output_tokens", f"the step's output token allowance of {outputs} is used up"
    if (micro := allowance.micro_usd) is not None:
        needed_usd = 1 if rates is None else least_cost(rates, estimate_tokens(request))
        if needed_usd > micro - usage.micro_usd:
            return "usd", (
                f"the step's share of {usd_text(micro)} has "
                f"{usd_text(max(0, micro - usage.micro_usd))} left, {call} costs at least "
                f"about {usd_text(needed_usd)}"
            )
    if tokens is None and inputs is None:
        return None  # the usual case: no estimate to make
    needed = estimate_tokens(request)
    caps: tuple[tuple[BudgetLimit, str, int | None, int, int], ...] = (
        # tokens: the input and at least one output token (a reply held to no room
        # would still write one, past the share); input tokens: the input alone
        ("tokens", "token", tokens, usage.total_tokens, 1),
        ("input_tokens", "input token", inputs, usage.whole_input_tokens, 0),
    )
    for limit, name, cap, spent, reply in caps:
        if cap is not None and needed + reply > cap - spent:
            return limit, (
                f"the step's {name} allowance of {cap} has {max(0, cap - spent)} left, "
                f"{call} needs about {needed + reply}"
            )
    return None
