"""A step whose share runs short waits for its siblings in flight to give back what they
did not spend, rather than end ``budget_exhausted`` with money unspent.

A top-up drew only what no step in flight held, at once: a long tool loop beside
nineteen quick steps (all sent together, each holding an even share) ended
``budget_exhausted`` and the run ``partial`` on several times what the run needs, its
siblings' unspent shares given back only after it had given up. A step that cannot top
up now waits while a sibling holding a share is still running (it will report and give
back what it did not spend); the last step that could give anything back never waits,
so no run waits on itself."""

from __future__ import annotations

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from regiment.hierarchy import Budget, BudgetToppedUp, Team

from .limits import budget_of, spent_of
from .test_budget_dependents import _team as dependents_team
from .test_budget_fan_out import Probe

WIDE: list[tuple[int, list[int]]] = [
    (6, []),
    *([(1, [])] * 19),
]  # one long tool loop beside nineteen one-tool steps


def _team(probe: Probe, budget: Budget, concurrency: int = 20) -> Team:
    """Twenty steps at most, quick steps' answers in flight as the long loop runs."""
    return dependents_team(probe, budget, concurrency, steps=20, iterations=8, quick=0.05)


@pytest.mark.anyio
@pytest.mark.parametrize("limit", ["tokens", "usd"])
async def test_a_long_step_beside_nineteen_quick_ones_completes_on_twice_its_need(
    limit: str,
) -> None:
    need = spent_of(await _team(Probe(WIDE), Budget()).run("goal"), limit)
    probe = Probe(WIDE)
    amount = need * 2
    result = await _team(probe, budget_of(limit, amount)).run("goal")
    # It ended partial, s1 budget_exhausted, with most of the budget unspent.
    assert (result.status, result.budget_exhausted) == ("completed", None)
    assert len(result.committed) == len(WIDE)
    assert sorted(probe.answered) == sorted(
        f"part {i} wants {w}" for i, (w, _) in enumerate(WIDE, 1)
    )
    assert spent_of(result, limit) <= amount
    assert "s1" in {e.step_id for e in result.events if isinstance(e, BudgetToppedUp)}


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
@settings(max_examples=12, deadline=None)
@given(
    wants=st.lists(st.integers(0, 6), min_size=2, max_size=12),
    limit=st.sampled_from(["tokens", "usd"]),
    fraction=st.integers(10, 400),
)
def test_wide_fan_outs_never_spend_past_the_limit_and_complete_on_twice_their_need(
    backend: str, wants: list[int], limit: str, fraction: int
) -> None:
    steps: list[tuple[int, list[int]]] = [(w, []) for w in wants]
    unlimited = anyio.run(_team(Probe(steps), Budget()).run, "goal", backend=backend)
    need = spent_of(unlimited, limit)
    for amount in (need * fraction // 100, need * 2):
        result = anyio.run(
            _team(Probe(steps), budget_of(limit, amount)).run, "goal", backend=backend
        )
        assert spent_of(result, limit) <= amount
        if amount == need * 2:
            assert (result.status, result.budget_exhausted) == ("completed", None)
            assert sorted(result.committed) == sorted(unlimited.committed)
        elif result.status == "partial":
            assert result.budget_exhausted in (limit, "model_calls")
