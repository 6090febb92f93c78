"""A step whose share of the money cannot pay for its first call is not sent, as one whose
share of the tokens cannot: fewer steps go at once, each with a larger share, and the
rest wait for what the running ones leave.

Money was split between every step still to be sent with no such check: twenty steps at
once on a tenth of what they need each got a share too small for one call, each asked
for a top-up while the others held theirs, and the run ended ``partial`` with not one
step committed and most of its money unspent (tokens at the same fraction committed
some). Nothing spends past the limit either way."""

from __future__ import annotations

import re

import pytest

from regiment.hierarchy import Budget, BudgetExhausted, StepDispatched

from .test_budget_money import _wide

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("tenth", [1, 2])
async def test_steps_whose_money_share_cannot_pay_their_first_call_wait(tenth: int) -> None:
    free, _ = await _wide(20, Budget())
    amount = free.usage.micro_usd * tenth // 20  # a twentieth, a tenth
    result, _ = await _wide(20, Budget(usd=amount / 1_000_000))
    assert result.usage.micro_usd <= amount
    assert (result.status, result.budget_exhausted) == ("partial", "usd")
    # Not one step was committed: every one was sent and could not pay for its call.
    assert len(result.committed) >= 5 * tenth
    assert not [r for r in result.steps if r.status == "budget_exhausted"]
    sent = [e for e in result.events if isinstance(e, StepDispatched)]
    assert len(sent) == len(result.committed)  # none sent that could not start
    (ended,) = [e for e in result.events if isinstance(e, BudgetExhausted)]
    assert ended.step_id is None
    assert ended.detail.startswith(("no budget left to dispatch step", "no budget left for the"))


@pytest.mark.parametrize(
    ("budget", "said"),
    [
        (Budget(usd=0.00001), r"it costs at least about \$0\.\d{6}, and \$0\.000010 is left$"),
        (Budget(tokens=20), r"it needs about \d+ tokens, and 20 are left$"),
    ],
)
async def test_a_plan_call_the_budget_cannot_pay_says_what_it_needs(
    budget: Budget, said: str
) -> None:
    # It said "no budget left for the plan model call", not how much was missing.
    result, _ = await _wide(3, budget)
    (ended,) = [e for e in result.events if isinstance(e, BudgetExhausted)]
    assert ended.detail.startswith("no budget left for the plan model call: ")
    assert re.search(said, ended.detail), ended.detail
