"""The heartbeat keeps a run owned while it beats, and stops the work once it is taken over."""

from __future__ import annotations

import anyio
import pytest

from regiment.errors import ConfigError
from regiment.journal import Journal, LeaseHeld, LeaseLost, heartbeat

from .records import Clock, created, new_id

pytestmark = pytest.mark.anyio

TTL = 30.0


async def test_a_beating_lease_outlives_its_ttl_and_a_taken_one_stops_the_beat(
    journal: Journal, clock: Clock
) -> None:
    run_id = new_id()
    lease = await journal.create_run(created(run_id), owner="a", ttl=TTL)
    beats = 0
    checked = anyio.Event()
    resume = anyio.Event()

    async def fake_sleep(seconds: float) -> None:
        nonlocal beats, resume
        clock.advance(seconds)
        beats += 1
        if beats == 10:  # 100 s in: three ttls have passed since the run was created
            checked.set()
            await resume.wait()

    stopped: list[LeaseLost] = []

    async def beat() -> None:
        try:
            await heartbeat(journal, lease, ttl=TTL, sleep=fake_sleep)
        except LeaseLost as exc:
            stopped.append(exc)

    async with anyio.create_task_group() as tg:
        tg.start_soon(beat)
        await checked.wait()
        assert (await journal.get_run(run_id)).status == "running"
        with pytest.raises(LeaseHeld):
            await journal.acquire(run_id, owner="b", ttl=TTL)
        clock.advance(TTL + 1)  # the owner "froze"; b takes over
        await journal.acquire(run_id, owner="b", ttl=TTL)
        resume.set()
    assert len(stopped) == 1
    assert beats == 10  # the renewal after the tenth wait was refused, and ended the beat


async def test_a_beat_that_is_not_shorter_than_the_ttl_is_refused(journal: Journal) -> None:
    lease = await journal.create_run(created(new_id()), owner="a", ttl=TTL)
    with pytest.raises(ConfigError, match=r"below ttl=30\.0 s"):
        await heartbeat(journal, lease, ttl=TTL, every=TTL)
