"""A pool's only replica killed mid-step while Ray restarts it (``max_restarts=1``, the
default): the step's retry waits for the restarted replica (up to
``Ray(start_timeout=...)``) instead of failing at once on it with Ray's
``ActorUnavailableError`` (and the run replanning)."""

from __future__ import annotations

import logging
import os
import re
import signal
from collections.abc import AsyncIterator
from types import ModuleType

import anyio
import pytest

from regiment.hierarchy import StepErrored

from ..models import messages_api
from ..models.standin import Reply, StandIn, serve
from ._in_flight import GOAL, noting_team

pytestmark = [pytest.mark.anyio, pytest.mark.ray, pytest.mark.timeout(180)]  # Ray starts processes


@pytest.fixture
async def api() -> AsyncIterator[StandIn]:
    block = {"type": "tool_use", "id": "toolu_1", "name": "note", "input": {"text": "n1"}}
    async for server in serve(messages_api.message([{"type": "text", "text": "noted all"}])):
        server.queue(messages_api.message([block], stop_reason="tool_use"))
        server.queue(Reply(200, {}, hold=True))  # the second call: held until the kill
        yield server


async def _kill_the_replica_while_it_holds(api: StandIn) -> None:
    with anyio.fail_after(90):
        while len(api.requests) < 2:  # woken by each request the stand-in gets
            api.received = anyio.Event()
            await api.received.wait()
    (pid,) = set(re.findall(r"noted in (\d+)", str(api.requests[1].body)))
    os.kill(int(pid), signal.SIGKILL)


async def test_the_retry_waits_for_the_only_replica_ray_restarts(
    ray_session: ModuleType, api: StandIn, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="regiment.ray")
    async with (
        noting_team(api.base_url, replicas=1).start() as running,
        anyio.create_task_group() as tg,
    ):
        tg.start_soon(_kill_the_replica_while_it_holds, api)
        result = await running.run(GOAL)
    assert result.status == "completed", result.events
    assert len(result.plans) == 1  # retried, not replanned
    assert not [e for e in result.events if isinstance(e, StepErrored)], result.events
    assert len(api.requests) == 3  # the held call, sent again by the retry, answered
    (step,) = result.steps
    assert step.output == "noted all"
    said = [r.getMessage() for r in caplog.records]
    assert any("retrying once on it, once Ray has restarted it" in s for s in said), said
