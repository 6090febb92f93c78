"""``Team.start()`` cancelled while its Ray replicas start (a Ctrl-C, a service's
shutdown, a caller's timeout) leaves none of them running: they were left building,
holding their Ray resources, until Ray collected their handles, if ever."""

from __future__ import annotations

import contextlib
from types import ModuleType

import anyio
import psutil
import pytest

from ._slow_start import slow_team

pytestmark = [pytest.mark.anyio, pytest.mark.ray, pytest.mark.timeout(180)]  # Ray starts processes


async def test_cancelling_team_start_while_its_replicas_start_leaves_none_running(
    ray_session: ModuleType, probe: tuple[str, object]
) -> None:
    name, handle = probe
    team = slow_team(name, ray_session.get_runtime_context().namespace)
    with anyio.CancelScope() as cancelled:
        async with anyio.create_task_group() as tg:

            async def cancel_once_a_replica_builds() -> None:
                await handle.wait_started.remote(1)  # type: ignore[attr-defined]
                cancelled.cancel()

            tg.start_soon(cancel_once_a_replica_builds)
            async with team.start():
                raise AssertionError("the replicas' builds never finish")
    assert cancelled.cancelled_caught
    started = (await handle.state.remote())["started"]  # type: ignore[attr-defined]
    assert started
    for pid in started:  # killed (waited for, bounded: Ray ends the process)
        with contextlib.suppress(psutil.NoSuchProcess):
            psutil.Process(pid).wait(timeout=30)
