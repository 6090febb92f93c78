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
    ray_session: ModuleType, probe: tuple[str, object], tmp_path: Path
) -> None:
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
