"""A replica killed mid-step: the step is retried once on another replica with the
same step key, and the side effect behind the tool's idempotency key happens once."""

from __future__ import annotations

import logging
import os
import signal

import anyio
import pytest

from regiment.hierarchy import RunFailed, StepCompleted, StepErrored

from ._ray_team import holder_team, plan_text

pytestmark = [pytest.mark.anyio, pytest.mark.ray, pytest.mark.timeout(180)]  # Ray starts processes


async def test_a_killed_replica_is_retried_once_and_the_effect_happens_once(
    probe: tuple[str, object], caplog: pytest.LogCaptureFixture
) -> None:
    name, handle = probe
    plan = plan_text({"id": "s1", "description": "Hold order 88213", "worker": "holder"})
    team = holder_team(name, [plan, "final answer"], commit_first=True, replicas=2, num_cpus=0)
    caplog.set_level(logging.WARNING, logger="regiment.ray")
    async with team.start() as running, anyio.create_task_group() as tg:

        async def kill_the_first_replica() -> None:
            (pid,) = await handle.wait_started.remote(1)  # type: ignore[attr-defined]
            os.kill(pid, signal.SIGKILL)

        tg.start_soon(kill_the_first_replica)
        result = await running.run("hold order 88213")

    assert result.status == "completed"
    assert result.committed == ("s1",)
    (step,) = result.steps
    assert step.status == "done"
    assert step.output == "held: already held"  # the retry found the effect done
    assert [e.step_id for e in result.events if isinstance(e, StepCompleted)] == ["s1"]
    state = await handle.state.remote()  # type: ignore[attr-defined]
    assert state["asked"] == {"hold:order_id=88213": 2}  # the same key both times
    assert state["performed"] == ["hold:order_id=88213"]  # and the effect once
    lost = [r for r in caplog.records if "retrying once on another replica" in r.getMessage()]
    assert len(lost) == 1
    assert "died mid-step" in lost[0].getMessage()


async def test_a_step_whose_replica_is_lost_twice_fails_with_worker_lost(
    probe: tuple[str, object],
) -> None:
    name, handle = probe
    plan = plan_text({"id": "s1", "description": "Hold order 88213", "worker": "holder"})
    # One replica that Ray does not restart: the retry finds it dead too.
    team = holder_team(name, [plan], replicas=1, max_restarts=0, num_cpus=0)
    async with team.start() as running, anyio.create_task_group() as tg:

        async def kill_the_replica() -> None:
            (pid,) = await handle.wait_started.remote(1)  # type: ignore[attr-defined]
            os.kill(pid, signal.SIGKILL)

        tg.start_soon(kill_the_replica)
        async with running.stream("hold order 88213") as events:
            seen = [e async for e in events]
    errored = [e for e in seen if isinstance(e, StepErrored)]
    assert [(e.step_id, e.status) for e in errored] == [("s1", "failed")]
    assert errored[0].error.startswith("WorkerLost: worker 'holder': its Ray replica died")
    assert isinstance(seen[-1], RunFailed)
    state = await handle.state.remote()  # type: ignore[attr-defined]
    assert len(state["started"]) == 1  # the retry never got to run the tool
