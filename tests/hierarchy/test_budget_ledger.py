"""The ledger's reservations: what it keeps as running totals matches the reservations."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from regiment.hierarchy import Budget
from regiment.hierarchy._budget import BudgetLedger

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
            ledger.reserve(f"k{key}", ways=ways, model_calls_cap=cap, keep_model_calls=1)
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
        probe = ledger.reserve("probe", ways=1, model_calls_cap=100, keep_model_calls=1)
        if calls >= 29 or tokens >= 10_000:  # no call left, or every token spoken for
            assert probe is None
        else:
            assert probe is not None
            assert probe.model_calls == 29 - calls
            assert probe.tool_calls == 20 - tools
            assert probe.tokens == 10_000 - tokens
        ledger.release("probe")


def test_reserving_a_key_again_replaces_its_reservation() -> None:
    ledger = BudgetLedger(Budget(model_calls=10))
    ledger.reserve("a", ways=1, model_calls_cap=4)
    ledger.reserve("a", ways=1, model_calls_cap=4)
    left = ledger.reserve("b", ways=1, model_calls_cap=100)
    assert left is not None
    assert left.model_calls == 6
