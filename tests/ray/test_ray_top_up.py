"""Top-ups across the hop: a step on a Ray replica whose share cannot pay for its
next tool calls asks its run, in the team's process, for more, under the same rule
as an in-process step (the same ``BudgetToppedUp`` event; tool calls never overshoot)."""

from __future__ import annotations

import os
import signal

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


async def test_a_step_retried_after_its_replica_died_keeps_its_top_up(
    probe: tuple[str, object],
) -> None:
    # As above, the long step is topped up by 2 for its third tool call; that call's
    # replica is killed mid-body. The retry on the other replica replays the first two
    # calls and runs the third again (same key): it must be sent with the share it was
    # topped up to, since the run's ledger holds that for it and has none left to give.
    name, handle = probe
    team = top_up_team(name, Budget(tool_calls=4), loops=3, hang_at=2, replicas=2)
    async with anyio.create_task_group() as tg:

        async def kill_the_replica() -> None:
            # the first start is the first call's (it waits in the probe), the second the
            # third call's, in the same replica
            _, pid = await handle.wait_started.remote(2)  # type: ignore[attr-defined]
            os.kill(pid, signal.SIGKILL)

        tg.start_soon(kill_the_replica)
        result = await _run(team, handle)
    assert (result.status, result.budget_exhausted) == ("completed", None)
    (long,) = [s for s in result.steps if s.step_id == "s1"]
    assert (long.status, long.output) == ("done", "looped 3 times")
    state = await handle.state.remote()  # type: ignore[attr-defined]
    # the killed call ran again with its key; the two before it were replayed
    assert state["asked"] == {"probe:0": 1, "probe:1": 1, "probe:2": 2}
    assert [e.step_id for e in result.events if isinstance(e, BudgetToppedUp)] == ["s1"]
