"""What a step's share lacks for its next model call (``call_need``, what it asks its
run's ``TopUps`` for) and how long its next reply may be (``reply_room``)."""

from __future__ import annotations

from regiment.hierarchy._allowance import Rates
from regiment.hierarchy._messages import StepAllowance
from regiment.models import (
    ModelRequest,
    Usage,
    estimate_tokens,
    least_cost,
    micro_usd,
    reply_tokens,
)

__all__ = ("Need", "call_need", "reply_room")

Need = dict[str, tuple[int, int]]
"""What a step asks for: budget field -> (the least that helps, what it wants)."""


def call_need(
    allowance: StepAllowance,
    model_calls: int,
    usage: Usage,
    request: ModelRequest,
    rates: Rates | None = None,
) -> Need:
    """What a step's share lacks for its next model call (``request``, to a model priced
    at ``rates``), after ``model_calls`` calls that spent ``usage``: each field that cannot
    pay, by how much (for money: the call's least cost, and what its reply could cost)."""
    need: Need = {}
    if (micro := allowance.micro_usd) is not None:
        least = 1 if rates is None else least_cost(rates, estimate_tokens(request))
        short = least - (micro - usage.micro_usd)
        if short > 0:
            want = (
                short if rates is None else short + micro_usd(rates, (0, request.max_tokens, 0, 0))
            )
            need["micro_usd"] = (short, want)
    if allowance.model_calls is not None and model_calls >= allowance.model_calls:
        need["model_calls"] = (1, 1)
    outputs = allowance.output_tokens
    if outputs is not None and usage.output_tokens >= outputs:
        short = usage.output_tokens - outputs + 1
        need["output_tokens"] = (short, short)
    if allowance.tokens is None and allowance.input_tokens is None:
        return need
    needed = estimate_tokens(request)
    caps = (  # tokens: the input and one output token (as ``over_allowance`` checks)
        ("tokens", allowance.tokens, usage.total_tokens, 1),
        ("input_tokens", allowance.input_tokens, usage.whole_input_tokens, 0),
    )
    for name, cap, spent, reply in caps:
        if cap is not None and needed + reply > cap - spent:
            short = needed + reply - (cap - spent)
            need[name] = (short, short)
    return need


def reply_room(
    allowance: StepAllowance, usage: Usage, request: ModelRequest, rates: Rates | None = None
) -> int | None:
    """The most output tokens a step's next reply (to ``request``) may have once the
    step spent ``usage``: what its share has left of ``output_tokens``, and of ``tokens``
    less the call's estimated input, and what its money left pays for at ``rates`` once
    the input is paid; at least 1 (``over_allowance`` refuses a call with no room
    first). ``None``: the share limits none of them, so the reply is not held."""
    outputs, tokens, micro = allowance.output_tokens, allowance.tokens, allowance.micro_usd
    if outputs is None and tokens is None and micro is None:
        return None
    rooms: list[int] = []
    if micro is not None and rates is not None:
        left = micro - usage.micro_usd
        rooms.append(reply_tokens(rates, left, estimate_tokens(request)))
    if outputs is not None:
        rooms.append(outputs - usage.output_tokens)
    if tokens is not None:
        rooms.append(tokens - usage.total_tokens - estimate_tokens(request))
    return max(1, min(rooms)) if rooms else None
