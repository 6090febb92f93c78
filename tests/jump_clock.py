"""A clock a test can move forward, so that a timeout fires once the work it cuts is known
to have started, and not by chance (a short real timeout can fire before the work starts
on a loaded machine; a long one makes the test wait it out).

A test marked ``@pytest.mark.jump_clock`` runs on an event loop whose clock is the real
one plus what the test skipped: trio's own ``MockClock`` at rate 1, asyncio's default loop
with ``time()`` moved on. Deadlines of the library's own (``step_timeout``, the run's
``wall_clock``) count on that clock (``anyio.current_time()``), so a test gives the work a
timeout it never reaches by itself (``NEVER``), waits until the work holds, and then
``await skip(NEVER)``: the deadline has passed, and the timeout fires at once.
"""

from __future__ import annotations

import asyncio
from typing import Any

import anyio
import trio
import trio.testing

__all__ = ("NEVER", "backend_options", "skip")

# A timeout no test reaches in real time (pytest-timeout's 60 s ends it first): only a
# skip of the clock makes it fire. A skip makes every deadline within it due, so it stays
# short of the deadlines a test does not mean to reach: a worker's default step_timeout
# (300 s) most of all.
NEVER = 100.0


class _SkippingLoop(asyncio.SelectorEventLoop):
    """The default event loop, its clock ``skipped`` seconds ahead of the real one."""

    skipped = 0.0

    def time(self) -> float:
        return super().time() + self.skipped


def backend_options(backend: str) -> dict[str, Any]:
    """The anyio backend options that run a test on a clock it can skip forward."""
    if backend == "trio":
        return {"clock": trio.testing.MockClock(rate=1.0)}
    return {"loop_factory": _SkippingLoop}


async def skip(seconds: float) -> None:
    """Moves the running loop's clock ``seconds`` on: every deadline within them is due.
    Only in a test marked ``jump_clock``."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:  # no asyncio loop: trio
        clock = trio.lowlevel.current_clock()
        assert isinstance(clock, trio.testing.MockClock), "mark the test jump_clock"
        clock.jump(seconds)
    else:
        assert isinstance(loop, _SkippingLoop), "mark the test jump_clock"
        loop.skipped += seconds
    # Sleeps past now (on the moved clock): the loop handles every deadline that has
    # passed, in their order, before this one; so a timeout that was due has fired.
    await anyio.sleep(0.001)
