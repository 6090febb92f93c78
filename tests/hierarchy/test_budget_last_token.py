"""A call whose estimated input fills what is left of a ``tokens`` limit is not made.

A step's call was allowed when its input fit its share exactly, its reply then held to
"at least 1" output token: one token past the share, and past the run's limit
(``Budget(tokens=550)`` spent 551 on a one-step plan). The ``tokens`` limit (input and
output together) now needs room for the input and one output token, for a step's share
and for the run's own calls alike; ``input_tokens`` still needs room for the input."""

from __future__ import annotations

import anyio
import pytest

from regiment.hierarchy import Budget

from .limits import budget_of, spent_of
from .test_budget_dependents import _team
from .test_budget_fan_out import Probe

ONE: list[tuple[int, list[int]]] = [(2, [])]  # one step calling its tool twice


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
@pytest.mark.parametrize("fraction", range(30, 40))
def test_a_call_that_fills_the_token_share_leaves_room_for_its_reply(
    backend: str, fraction: int
) -> None:
    need = spent_of(
        anyio.run(_team(Probe(ONE), Budget(), 1).run, "goal", backend=backend), "tokens"
    )
    amount = need * fraction // 100  # 35: the step's first call's input filled its share
    result = anyio.run(
        _team(Probe(ONE), budget_of("tokens", amount), 1).run, "goal", backend=backend
    )
    assert spent_of(result, "tokens") <= amount
    assert (result.status, result.budget_exhausted) == ("partial", "tokens")
