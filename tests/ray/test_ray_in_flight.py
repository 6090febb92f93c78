"""A replica's model call in flight when the team's process is killed (SIGKILL) is
charged on resume at the most it could have spent, as an in-process worker's is
(``tests/journal/test_crash_in_flight.py``): the provider bills a call when it gets it,
whether or not its reply comes back. The worker's model is the Anthropic SDK on the
replica, against a stand-in Messages API that never answers the third call."""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from types import ModuleType

import anyio
import pytest

from regiment.hierarchy.run._journaling import LEASE_TTL
from regiment.journal import ModelCallFinished, ModelCallStarted, open_journal
from regiment.models import Usage, priced

from ..models import messages_api
from ..models.standin import Reply, StandIn, serve
from ._in_flight import CLAUDE, USD, noting_team
from ._killed import killed_child

pytestmark = [pytest.mark.anyio, pytest.mark.ray, pytest.mark.timeout(180)]  # Ray starts processes

CHILD = Path(__file__).with_name("_in_flight.py")
KEY = "step/1/s1/3"  # the worker's third call: in flight at the kill


def _note(n: int) -> Reply:
    block: dict[str, object] = {
        "type": "tool_use",
        "id": f"toolu_{n}",
        "name": "note",
        "input": {"text": f"n{n}"},
    }
    return messages_api.message([block], stop_reason="tool_use")


@pytest.fixture
async def api() -> AsyncIterator[StandIn]:
    async for server in serve(messages_api.message([{"type": "text", "text": "noted all"}])):
        server.queue(_note(1), _note(2), Reply(200, {}, hold=True))
        yield server


async def _killed_in_flight(ray: ModuleType, journal: Path, api: StandIn) -> str:
    """The team run in a child process joined to this Ray, SIGKILLed once its replica's
    third model call reached the stand-in (and is held there): the run's id."""
    context = ray.get_runtime_context()
    argv = [sys.executable, str(CHILD), context.gcs_address, context.namespace, str(journal)]

    async def third_call_held() -> None:
        with anyio.fail_after(90):
            while len(api.requests) < 3:  # woken by each request the stand-in gets
                api.received = anyio.Event()
                await api.received.wait()

    return await killed_child([*argv, api.base_url], journal.with_suffix(".log"), third_call_held)


async def test_a_replicas_call_in_flight_at_a_crash_is_charged_at_its_most_on_resume(
    ray_session: ModuleType,
    api: StandIn,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    path = tmp_path / "runs.db"
    run_id = await _killed_in_flight(ray_session, path, api)
    journal = await open_journal(str(path), clock=lambda: time.time() + LEASE_TTL + 1)
    try:
        before = [e.record for e in await journal.read(run_id)]
        with caplog.at_level(logging.WARNING, logger="regiment.run"):
            async with noting_team(api.base_url).start(journal=journal) as running:
                resumed = await running.resume(run_id)
        records = [e.record for e in await journal.read(run_id)]
    finally:
        await journal.close()
    # Its intent reached the journal, durably, before the replica's call went out.
    (held,) = [r for r in before if isinstance(r, ModelCallStarted) and r.call_key == KEY]
    assert not [r for r in before if isinstance(r, ModelCallFinished) and r.call_key == KEY]
    assert held.role == "w"
    most = held.most.micro_usd or 0
    assert most > 0
    assert len(api.requests) == 4  # the held call was sent again on resume, and answered
    assert (resumed.status, resumed.budget_exhausted) == ("completed", None)
    starts = [r for r in records if isinstance(r, ModelCallStarted) and r.call_key == KEY]
    assert [s.role for s in starts] == ["w", "w"]
    finished = [r for r in records if isinstance(r, ModelCallFinished) and r.call_key == KEY]
    assert len(finished) == 1
    answered = priced(Usage(input_tokens=11, output_tokens=7), CLAUDE).micro_usd
    # Three answered calls (two journaled before the crash, one after), and the held one
    # at the most it could have cost: what a provider may have billed, counted.
    assert resumed.usage_by_role["w"].micro_usd == 3 * answered + most
    assert resumed.usage.micro_usd <= USD * 1e6
    assert f"run {run_id}: 1 model call was in flight" in caplog.text
    assert f"{KEY} by 'w'" in caplog.text
