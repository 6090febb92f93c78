"""tests/jump_clock.py: a skip of the clock makes a deadline within it fire at once, on
both backends, and leaves a later one alone; unmarked, a skip says what to do."""

from __future__ import annotations

import anyio
import pytest

from .jump_clock import NEVER, skip

pytestmark = pytest.mark.anyio


@pytest.mark.jump_clock
async def test_a_skip_fires_the_deadlines_it_passes_and_no_later_one() -> None:
    began = anyio.current_time()
    with anyio.move_on_after(2 * NEVER) as later, anyio.move_on_after(NEVER) as sooner:
        async with anyio.create_task_group() as tg:
            tg.start_soon(skip, NEVER)
            await anyio.sleep_forever()
    assert sooner.cancelled_caught
    assert not later.cancel_called
    assert anyio.current_time() - began >= NEVER


async def test_an_unmarked_test_cannot_skip() -> None:
    with pytest.raises(AssertionError, match="mark the test jump_clock"):
        await skip(1)
