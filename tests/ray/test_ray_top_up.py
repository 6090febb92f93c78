"""Top-ups across the hop: a step on a Ray replica whose share cannot pay for its
next tool calls asks its run, in the team's process, for more, under the same rule
as an in-process step (the same ``BudgetToppedUp`` event; tool calls never overshoot)."""

from __future__ import annotations

import anyio
import pytest

from regiment.hierarchy import (
    Budget,
    BudgetExhausted,
    BudgetToppedUp,
    RunCompleted,
    RunResult,
    StepCompleted,
    Team,
)

from ._ray_top_up import ANSWERED, LOOPED, top_up_team

pytestmark = [pytest.mark.anyio, pytest.mark.ray, pytest.mark.timeout(180)]  # Ray starts processes


async def _run(team: Team, handle: object, shorts: int = 1) -> RunResult:
    """Stream a run; once the short steps have reported, the long step's first tool
    call (waiting in the probe) is let go."""
    done = 0
    async with team.start() as running, running.stream("loop") as events:
        async for event in events:
            done += isinstance(event, StepCompleted) and event.step_id != "s1"
            if isinstance(event, StepCompleted) and event.step_id != "s1" and done == shorts:
                with anyio.fail_after(60):
                    await handle.release.remote()  # type: ignore[attr-defined]
    assert isinstance(events.ending, RunCompleted)
    return events.ending.result


async def test_a_step_on_a_replica_is_topped_up_by_its_run_and_never_overshoots(
    probe: tuple[str, object],
) -> None:
    # Budget(tool_calls=4) over two steps: a share of 2 each. The short step gives its 2
    # back; the long one, wanting 5, is topped up by those 2 on its 3rd call (the run's
    # rule: all that is free, as no step is still to be sent) and is refused its 5th.
    name, handle = probe
    result = await _run(top_up_team(name, Budget(tool_calls=4), loops=5), handle)
    state = await handle.state.remote()  # type: ignore[attr-defined]
    assert sorted(state["asked"]) == [f"probe:{n}" for n in range(4)]  # 4 bodies ran
    assert set(state["asked"].values()) == {1}  # each once
    (topped,) = [e for e in result.events if isinstance(e, BudgetToppedUp)]
    assert (topped.step_id, topped.granted.tool_calls, topped.allowance.tool_calls) == (
        "s1",
        2,
        4,
    )
    assert (result.status, result.budget_exhausted) == ("partial", "tool_calls")
    assert result.tool_calls == 4
    assert [e.limit for e in result.events if isinstance(e, BudgetExhausted)] == ["tool_calls"]


async def test_a_step_on_a_replica_whose_output_tokens_ran_out_is_topped_up(
    probe: tuple[str, object],
) -> None:
    # Four steps share 4 x 150 output tokens (after the plan's 10). The long one's replies
    # spend 100 each: its third call finds its 150 spent (200) and asks its run. Unspent:
    # 610 - 10 - 3 x 10 = 570, of which it holds 150; the synthesis keeps an even part
    # (570 // 2), so it may draw 570 - 150 - 285 = 135, which pays for its last call.
    name, handle = probe
    budget = Budget(output_tokens=ANSWERED.output_tokens + 4 * 150)
    result = await _run(top_up_team(name, budget, loops=2, shorts=3), handle, shorts=3)
    assert (result.status, result.budget_exhausted) == ("completed", None)
    (topped,) = [e for e in result.events if isinstance(e, BudgetToppedUp)]
    assert topped.step_id == "s1"
    assert (topped.granted.output_tokens, topped.allowance.output_tokens) == (135, 285)
    (long,) = [s for s in result.steps if s.step_id == "s1"]
    assert (long.status, long.model_calls) == ("done", 3)
    assert long.usage.output_tokens == 3 * LOOPED.output_tokens
    assert result.answer == "the answer"  # the synthesis still got its call
