"""A plain (sync) guard runs in a worker thread, as a sync tool does: one that blocks
(on a moderation service, say) holds no other step up, and the step's timeout does not
wait for it."""

from __future__ import annotations

import threading

import anyio
import pytest

from regiment.hierarchy import RunFailed, RunResult
from regiment.hierarchy.guard import Outcome, Pass, ToolCallSubject

from ..jump_clock import NEVER, skip
from .brains import Brain, plan_json
from .test_guardrails_steps import Till, brain, make_team, refund_then_report, run

pytestmark = pytest.mark.anyio

# How long a blocked guard waits before it gives up: only ever reached when a guard
# blocks the event loop (the old behaviour), so the test fails instead of hanging.
GIVE_UP = 10.0


async def test_a_blocking_sync_guard_holds_no_other_step_up() -> None:
    s1_judging, released = threading.Event(), threading.Event()
    got_through: list[bool] = []

    def moderation(subject: ToolCallSubject) -> Outcome:
        if subject.step_id == "s1":  # blocks until s2's guard has run
            s1_judging.set()
            got_through.append(released.wait(GIVE_UP))
        elif s1_judging.wait(GIVE_UP):  # s2 runs only while s1's guard blocks
            released.set()
        return Pass()

    plan = plan_json({"description": "refund order 7"}, {"description": "refund order 8"})
    b = Brain([plan], work=refund_then_report)
    till = Till()
    outcome, _ = await run(make_team(till, b, worker_guards=[moderation]))
    assert isinstance(outcome, RunResult)
    assert got_through == [True]
    assert till.refunds == [7, 7]


@pytest.mark.jump_clock
async def test_a_steps_timeout_does_not_wait_for_its_blocking_guard() -> None:
    started, gate, finished = threading.Event(), threading.Event(), threading.Event()

    def stuck(subject: ToolCallSubject) -> Outcome:
        started.set()
        gate.wait(GIVE_UP)
        finished.set()
        return Pass()

    async def time_out_once_it_blocks() -> None:
        # The step's timeout is never reached in real time (with a short one, the step
        # could time out before its guard ran); once the guard blocks, the clock is
        # moved past it, so the timeout fires while the guard waits.
        assert await anyio.to_thread.run_sync(started.wait, GIVE_UP), "the guard never ran"
        await skip(NEVER)

    till = Till()
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(time_out_once_it_blocks)
            outcome, _ = await run(
                make_team(till, brain(), worker_guards=[stuck], step_timeout=NEVER)
            )
        assert started.is_set(), "the step timed out before its guard ran"
        assert not finished.is_set()  # the run ended while the guard still blocked
    finally:
        gate.set()
        assert finished.wait(GIVE_UP)  # its thread ran to its end unseen
    assert isinstance(outcome, RunFailed)
    assert "ended timed_out" in outcome.message
    assert till.refunds == []
