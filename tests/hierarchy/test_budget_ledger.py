"""The ledger's reservations and fan-out shares."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from regiment.hierarchy import Budget
from regiment.hierarchy._budget import BudgetLedger, Share

# (reserve or release, key, ways, model-call cap)
_Op = tuple[bool, int, int, int]
_ops = st.lists(
    st.tuples(st.booleans(), st.integers(0, 5), st.integers(1, 4), st.integers(1, 6)),
    max_size=40,
)


@given(ops=_ops)
def test_what_is_left_always_matches_the_reservations_held(ops: list[_Op]) -> None:
    budget = Budget(model_calls=30, tool_calls=20, tokens=10_000)
    ledger = BudgetLedger(budget)
    for reserve, key, ways, cap in ops:
        if reserve:
            share = ledger.split(ways)[0]
            ledger.reserve(f"k{key}", model_calls_cap=cap, keep_model_calls=1, share=share)
        else:
            ledger.release(f"k{key}")
        held = list(ledger.reserved.values())
        calls = sum(a.model_calls or 0 for a in held)
        tools = sum(a.tool_calls or 0 for a in held)
        tokens = sum(a.tokens or 0 for a in held)
        assert calls <= 30 - 1  # never more than the limit less what synthesis keeps
        assert tools <= 20
        assert tokens <= 10_000
        # the next reservation sees exactly what the held ones leave
        probe = ledger.reserve("probe", model_calls_cap=100, keep_model_calls=1)
        if calls >= 29 or tokens >= 10_000:  # no call left, or every token spoken for
            assert probe is None
        else:
            assert probe is not None
            assert probe.model_calls == 29 - calls
            assert probe.tool_calls == 20 - tools
            assert probe.tokens == 10_000 - tokens
        ledger.release("probe")


@given(
    tool_calls=st.none() | st.integers(0, 50),
    tokens=st.none() | st.integers(0, 5_000),
    spent=st.integers(0, 10),
    ways=st.integers(1, 12),
)
def test_a_fan_out_splits_what_was_left_when_it_began(
    tool_calls: int | None, tokens: int | None, spent: int, ways: int
) -> None:
    ledger = BudgetLedger(Budget(tool_calls=tool_calls, tokens=tokens))
    ledger.reserve("earlier", model_calls_cap=1, share=Share(min(spent, tool_calls or 0), None))
    left = None if tool_calls is None else tool_calls - min(spent, tool_calls)
    shares = ledger.split(ways)
    held = []
    for i, share in enumerate(shares):
        allowance = ledger.reserve(f"s{i}", model_calls_cap=2, share=share)
        if share.tokens == 0:
            assert allowance is None
            continue
        assert allowance is not None
        held.append(allowance)
    if left is None:
        assert all(s.tool_calls is None for s in shares)
    else:
        parts = [s.tool_calls or 0 for s in shares]
        assert sum(parts) == left  # nothing is lost to rounding
        assert max(parts) - min(parts) <= 1  # and nobody gets less than an even share
        if left >= ways:  # a budget that covers every step starves none of them
            assert min(parts) >= 1
    if tokens is not None:
        assert sum(s.tokens or 0 for s in shares) == tokens


def test_reserving_a_key_again_replaces_its_reservation() -> None:
    ledger = BudgetLedger(Budget(model_calls=10))
    ledger.reserve("a", model_calls_cap=4)
    ledger.reserve("a", model_calls_cap=4)
    left = ledger.reserve("b", model_calls_cap=100)
    assert left is not None
    assert left.model_calls == 6


def test_each_limit_alone_is_reported_when_spent_and_none_without_limits() -> None:
    spend = {"model_calls": 5, "input_tokens": 40, "output_tokens": 60}
    unlimited = BudgetLedger(Budget())
    unlimited.spent.model_calls = spend["model_calls"]
    unlimited.spent.input_tokens = spend["input_tokens"]
    unlimited.spent.output_tokens = spend["output_tokens"]
    assert unlimited.exhausted(model_calls_needed=10**6, tokens_needed=10**9) is None
    alone = (
        ("model_calls", Budget(model_calls=5)),
        ("tokens", Budget(tokens=100)),
        ("input_tokens", Budget(input_tokens=40)),
        ("output_tokens", Budget(output_tokens=60)),
    )
    for limit, budget in alone:
        ledger = BudgetLedger(budget)
        assert ledger.exhausted() is None, limit
        ledger.spent.model_calls = spend["model_calls"]
        ledger.spent.input_tokens = spend["input_tokens"]
        ledger.spent.output_tokens = spend["output_tokens"]
        assert ledger.exhausted() == limit


@given(caps=st.lists(st.integers(0, 8), min_size=1, max_size=30))
def test_a_budget_with_no_count_limit_gives_each_step_its_cap_and_holds_nothing(
    caps: list[int],
) -> None:
    ledger = BudgetLedger(Budget(replans=1, rounds=2, wall_clock=5.0))
    for n, cap in enumerate(caps):
        allowance = ledger.reserve(("v1", n), model_calls_cap=cap, keep_model_calls=1)
        if cap < 1:
            assert allowance is None
            continue
        assert allowance is not None
        assert allowance.model_calls == cap
        assert (allowance.tool_calls, allowance.tokens) == (None, None)
        assert (allowance.input_tokens, allowance.output_tokens) == (None, None)
    assert ledger.exhausted(model_calls_needed=10**6) is None  # nothing to run out of
    for n in range(len(caps)):
        ledger.release(("v1", n))  # releasing what was never held changes nothing
    assert ledger.reserve("after", model_calls_cap=3) == ledger.reserve("again", model_calls_cap=3)


@given(
    usd=st.none() | st.floats(0, 10),
    tokens=st.none() | st.integers(0, 5_000),
    ways=st.integers(0, 12),
    first=st.integers(0, 14),
)
def test_the_first_shares_of_a_fan_out_are_those_of_the_whole_split(
    usd: float | None, tokens: int | None, ways: int, first: int
) -> None:
    # A fan-out makes only the shares of the steps it sends now (#22): they are the
    # first of the shares a split between every pending step makes.
    ledger = BudgetLedger(Budget(usd=usd, tokens=tokens, output_tokens=tokens))
    assert ledger.split(ways, first) == ledger.split(ways)[:first]
