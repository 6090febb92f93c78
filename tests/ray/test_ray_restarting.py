"""A pool's only replica killed mid-step while Ray restarts it (``max_restarts=1``, the
default): the step's retry waits for the restarted replica (up to
``Ray(start_timeout=...)``) instead of failing at once on it with Ray's
``ActorUnavailableError`` (and the run replanning)."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from pathlib import Path
from types import ModuleType

import anyio
import pytest

from regiment.hierarchy import RunFailed, StepErrored

from ..models.standin import StandIn
from . import _restart_hangs as dying
from ._held import holding_api, kill_the_replica_while_it_holds
from ._in_flight import GOAL, noting_team
from ._restart_hangs import dying_team

STOP_GRACE = 3  # seconds a replica has to answer as its team stops (_ray_stop.STOP_GRACE)

pytestmark = [pytest.mark.anyio, pytest.mark.ray, pytest.mark.timeout(180)]  # Ray starts processes


@pytest.fixture
async def api() -> AsyncIterator[StandIn]:
    async for server in holding_api():
        yield server


async def test_the_retry_waits_for_the_only_replica_ray_restarts(
    ray_session: ModuleType, api: StandIn, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="regiment.ray")
    async with (
        noting_team(api.base_url, replicas=1).start() as running,
        anyio.create_task_group() as tg,
    ):
        tg.start_soon(kill_the_replica_while_it_holds, api)
        result = await running.run(GOAL)
    assert result.status == "completed", result.events
    assert len(result.plans) == 1  # retried, not replanned
    assert not [e for e in result.events if isinstance(e, StepErrored)], result.events
    assert len(api.requests) == 3  # the held call, sent again by the retry, answered
    (step,) = result.steps
    assert step.output == "noted all"
    said = [r.getMessage() for r in caplog.records]
    assert any("retrying once on it, once Ray has restarted it" in s for s in said), said


async def test_a_replica_not_back_within_start_timeout_fails_the_step_saying_so(
    ray_session: ModuleType,
    probe: tuple[str, object],
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger="regiment.ray")
    name, handle = probe
    namespace = ray_session.get_runtime_context().namespace
    # The first start has these seconds too: enough for it on a loaded machine.
    team = dying_team(tmp_path, name, namespace, start_timeout=15, replicas=1, hang=True)
    async with team.start() as running, running.stream(dying.GOAL) as events:
        seen = [e async for e in events]
    assert await handle.wait_started.remote(1)  # type: ignore[attr-defined]  # it restarted
    errored = [e for e in seen if isinstance(e, StepErrored)]
    assert [(e.step_id, e.status) for e in errored] == [("s1", "failed")]
    said = errored[0].error
    assert said.startswith("WorkerLost: worker 'w': its Ray replica died mid-step"), said
    assert "was restarting and did not come back within 15 s (Ray(start_timeout=...))" in said
    assert isinstance(seen[-1], RunFailed)
    # The team's stop did not wait on it: killed at once, saying what went with it.
    stopped = [r.getMessage() for r in caplog.records if "as the team stopped" in r.getMessage()]
    assert len(stopped) == 1, stopped
    assert stopped[0].startswith(
        f"Ray replica 0 of 'w' did not answer within {STOP_GRACE:g} s as the team stopped ("
    ), stopped
    assert "it was killed at once, and with it went the log records" in stopped[0]


async def test_cancelling_a_run_stops_the_wait_for_a_restarting_replica_at_once(
    ray_session: ModuleType, probe: tuple[str, object], tmp_path: Path
) -> None:
    name, handle = probe
    namespace = ray_session.get_runtime_context().namespace
    # Far longer than the test's own timeout: only the cancel can end the wait.
    team = dying_team(tmp_path, name, namespace, start_timeout=3600, replicas=1, hang=True)
    async with team.start() as running:
        with anyio.CancelScope() as scope:
            async with anyio.create_task_group() as tg:

                async def cancel_once_it_restarts() -> None:
                    await handle.wait_started.remote(1)  # type: ignore[attr-defined]
                    scope.cancel()

                tg.start_soon(cancel_once_it_restarts)
                await running.run(dying.GOAL)
        assert scope.cancelled_caught


async def test_with_both_replicas_killed_the_retry_waits_for_one_to_restart(
    ray_session: ModuleType, probe: tuple[str, object], tmp_path: Path
) -> None:
    name, handle = probe
    namespace = ray_session.get_runtime_context().namespace
    team = dying_team(tmp_path, name, namespace, start_timeout=120, replicas=2, hang=False)
    async with team.start() as running:
        result = await running.run(dying.GOAL)
    assert result.status == "completed", result.events
    assert not [e for e in result.events if isinstance(e, StepErrored)], result.events
    (step,) = result.steps
    assert step.output == "worked"  # the retry, on a replica Ray restarted
    asked = (await handle.state.remote())["asked"]  # type: ignore[attr-defined]
    assert len([k for k in asked if k.startswith("replica ")]) >= 3  # two, and one restarted


async def test_a_first_try_goes_to_a_live_replica_not_one_ray_is_still_restarting(
    ray_session: ModuleType,
    probe: tuple[str, object],
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Replica 0 dies in the first run's step (retried on replica 1) and its restart
    hangs. The third run's step, whose turn is replica 0's, goes to replica 1 at once:
    before, it went to replica 0, failed there (Ray's ActorUnavailableError) and spent its
    one retry on replica 1, so a loss there would have failed the step."""
    caplog.set_level(logging.WARNING, logger="regiment.ray")
    name, handle = probe
    namespace = ray_session.get_runtime_context().namespace
    team = dying_team(tmp_path, name, namespace, start_timeout=120, replicas=2, hang=True, own=True)
    async with team.start() as running:
        results = [await running.run(dying.GOAL) for _ in range(3)]
        assert await handle.wait_started.remote(1)  # type: ignore[attr-defined]  # restarting
    assert [r.status for r in results] == ["completed"] * 3, results[-1].events
    assert [r.steps[0].output for r in results] == ["worked"] * 3
    assert all(len(r.plans) == 1 for r in results)  # no step failed: nothing replanned
    retried = [r for r in caplog.records if "retrying once on" in r.getMessage()]
    assert [r.run_id for r in retried] == [results[0].run_id], [  # type: ignore[attr-defined]
        r.getMessage() for r in retried
    ]
