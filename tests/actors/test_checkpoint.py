"""The actor system's checkpoint (``ActorSystem.checkpoint``): one pass through the
event loop, on both backends; on asyncio one bare yield, not ``asyncio.sleep(0)``'s
coroutine and generator (a worker's runner passes a turn each millisecond it holds
the loop, issue #22)."""

from __future__ import annotations

import sys
from types import FrameType

import anyio
import pytest

from regiment.actors import open_actor_system

pytestmark = pytest.mark.anyio


async def test_a_checkpoint_lets_the_tasks_ready_before_it_run() -> None:
    ran: list[str] = []

    async def other() -> None:
        ran.append("other")

    async with open_actor_system() as system, anyio.create_task_group() as tg:
        tg.start_soon(other)  # ready, not yet run
        # (trio runs a turn's ready tasks in any order: by the second, it has run)
        await system.checkpoint()
        await system.checkpoint()
        ran.append("after the checkpoints")
    assert ran == ["other", "after the checkpoints"]


async def test_a_cancelled_checkpoint_raises_the_cancellation() -> None:
    async with open_actor_system() as system:
        with anyio.CancelScope() as scope:
            scope.cancel()
            await system.checkpoint()
            pytest.fail("the checkpoint did not deliver the cancel")  # pragma: no cover
        assert scope.cancelled_caught


async def test_a_checkpoint_is_one_python_call(anyio_backend: str) -> None:
    calls: list[str] = []
    frames: list[FrameType] = []  # a generator's frame is "called" again as it resumes

    def profile(frame: FrameType, event: str, _: object) -> None:
        caller = frame.f_back
        if event != "call" or caller is None or caller.f_code is not here:
            return
        if not any(frame is seen for seen in frames):
            frames.append(frame)
            calls.append(frame.f_code.co_qualname)

    here = test_a_checkpoint_is_one_python_call.__code__
    async with open_actor_system() as system:
        checkpoint = system.checkpoint
        sys.setprofile(profile)
        try:
            await checkpoint()
        finally:
            sys.setprofile(None)
    # trio's own checkpoint; on asyncio, no asyncio.sleep (a coroutine, then __sleep0)
    assert calls == (["_pass_turn"] if anyio_backend == "asyncio" else ["checkpoint"])
