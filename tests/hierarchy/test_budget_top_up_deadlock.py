"""A step waiting for a top-up must never wait on siblings that cannot give back.

``grant_waiting`` counted every step holding a share as one that would report and give
back; a fan-out on 35% of its need hung forever (the loop idle), every step left waiting
on the others. Shrunk from the hypothesis test of ``test_budget_top_up_waits``."""

from __future__ import annotations

import anyio
import pytest

from regiment.hierarchy import Budget

from .limits import budget_of, spent_of
from .test_budget_fan_out import Probe
from .test_budget_top_up_waits import _team

WANTS = [1, 1, 1, 1, 1, 1, 1, 2, 6]


@pytest.mark.anyio
@pytest.mark.parametrize("limit", ["tokens", "usd"])
async def test_a_fan_out_on_a_third_of_its_need_ends_instead_of_hanging(limit: str) -> None:
    steps: list[tuple[int, list[int]]] = [(w, []) for w in WANTS]
    need = spent_of(await _team(Probe(steps), Budget()).run("goal"), limit)
    amount = need * 35 // 100
    with anyio.fail_after(20):  # it hung forever: every step waited on the others
        result = await _team(Probe(steps), budget_of(limit, amount)).run("goal")
    assert spent_of(result, limit) <= amount
    assert result.status == "partial"
    assert result.budget_exhausted in (limit, "model_calls")
