"""``RunClock``: the wall-clock budget stands still while any approval wait holds it."""

from __future__ import annotations

import anyio
import pytest

from regiment.hierarchy._clock import RunClock

pytestmark = pytest.mark.anyio


async def test_a_held_clock_runs_out_only_once_the_last_overlapping_wait_ends() -> None:
    clock, fired = RunClock(), anyio.Event()

    async def expired() -> None:
        fired.set()

    async with anyio.create_task_group() as tg:
        with clock.held():  # a call waits before the budget starts counting
            tg.start_soon(clock.run, 0.0, expired)  # no time left at all
            await anyio.wait_all_tasks_blocked()
            with clock.held():  # a second call waits, and its wait ends first
                await anyio.wait_all_tasks_blocked()
            await anyio.wait_all_tasks_blocked()
            assert not fired.is_set()  # still held by the first wait
        await fired.wait()  # released: the budget (none left) runs out at once


async def test_a_stopped_clock_never_calls_expired() -> None:
    clock, fired = RunClock(), anyio.Event()

    async def expired() -> None:
        fired.set()

    with anyio.CancelScope() as scope:
        async with anyio.create_task_group() as tg:
            tg.start_soon(clock.run, 3600.0, expired)
            await anyio.wait_all_tasks_blocked()
            scope.cancel()  # the run ended: its deadline task is cancelled
    assert not fired.is_set()
    with clock.held():  # a late wait of the ended run touches nothing
        pass
