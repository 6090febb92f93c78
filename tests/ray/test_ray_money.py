"""A money limit over workers on Ray: a step's share of money crosses the hop with its
other shares, the replica charges its model calls at the model's price, a share that
runs short is topped up across the hop with money, and the run never spends past
``Budget.usd``."""

from __future__ import annotations

import pytest

from regiment.hierarchy import (
    Budget,
    BudgetToppedUp,
    RunCompleted,
    RunResult,
    StepCompleted,
    Team,
)
from regiment.models import Price, Usage

from ._ray_top_up import ANSWERED, LOOPED, top_up_team
from .test_ray_top_up import _run

pytestmark = [pytest.mark.anyio, pytest.mark.ray, pytest.mark.timeout(180)]  # Ray starts processes

WHOLE = Price(input=1.0, output=2.0)  # whole micro-dollars a token: input + 2 x output


def _cost(usage: Usage) -> int:
    return usage.whole_input_tokens + 2 * usage.output_tokens


FULL = 6 * _cost(LOOPED) + 5 * _cost(ANSWERED)  # the run unlimited: the loop, and 5 others


def _looper(result: RunResult) -> Usage:
    (long,) = [s for s in result.steps if s.step_id == "s1"]
    return long.usage


async def test_a_step_on_a_replica_is_charged_at_its_price_and_topped_up_with_money(
    probe: tuple[str, object],
) -> None:
    # The replicas build the looper's model with no price: its calls are charged at the
    # price the team's process checked, on the replica (each response's usage carries it).
    # Three times what the run spends, in four shares: the long step's share pays for
    # three of its six calls (a call's estimated input costs more than its 1 token);
    # its siblings give back most of theirs, and it is topped up across the hop.
    name, handle = probe
    team = top_up_team(name, Budget(usd=3 * FULL / 1_000_000), loops=5, shorts=3, price=WHOLE)
    result = await _run(team, handle, shorts=3)
    assert (result.status, result.budget_exhausted) == ("completed", None)
    (topped,) = [e for e in result.events if isinstance(e, BudgetToppedUp)]
    assert topped.step_id == "s1"
    assert (topped.granted.micro_usd or 0) > 0
    assert topped.allowance.micro_usd is not None
    assert topped.allowance.micro_usd < 3 * FULL
    assert _looper(result).micro_usd == 6 * _cost(LOOPED) > 0
    assert result.usage_by_role["looper"].micro_usd == 6 * _cost(LOOPED)
    assert result.usage.micro_usd == FULL == _cost(result.usage)


async def _released_once(team: Team, handle: object) -> RunResult:
    """``_run``, but the probe is let go without waiting for its call to end: a step held
    to a tight share may never make the call that waits there."""
    done = 0
    async with team.start() as running, running.stream("loop") as events:
        async for event in events:
            done += isinstance(event, StepCompleted) and event.step_id != "s1"
            if isinstance(event, StepCompleted) and event.step_id != "s1" and done == 3:
                handle.release.remote()  # type: ignore[attr-defined]
    assert isinstance(events.ending, RunCompleted)
    return events.ending.result


async def test_a_tight_money_budget_is_never_overspent_through_a_replica(
    probe: tuple[str, object],
) -> None:
    # Replies keep to max_tokens here, as a provider's do: the replica holds each to what
    # the step's share (topped up across the hop) can pay at the model's output price.
    # (A call's estimated input costs more than the 1 token its reply says it read.)
    name, handle = probe
    usd = 2 * FULL  # the long step runs short, is topped up, and runs short again
    team = top_up_team(name, Budget(usd=usd / 1_000_000), loops=5, shorts=3, price=WHOLE, held=True)
    result = await _released_once(team, handle)
    assert (result.status, result.budget_exhausted) == ("partial", "usd")
    assert 0 < result.usage.micro_usd <= usd
    assert _looper(result).micro_usd == _cost(_looper(result)) > 0
    # the long step was topped up across the hop before its share ran out for good
    (topped,) = [e for e in result.events if isinstance(e, BudgetToppedUp)]
    assert topped.step_id == "s1"
    assert 0 < (topped.granted.micro_usd or 0) < (topped.allowance.micro_usd or 0) <= usd
    (long,) = [s for s in result.steps if s.step_id == "s1"]
    assert (long.status, long.exhausted) == ("budget_exhausted", "usd")
