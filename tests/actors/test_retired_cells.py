"""A retired actor leaves no reference cycle: its cell, mailbox and ref are freed
when nothing outside holds them, by reference counting, not by a later pass of
the cyclic garbage collector. A ref kept by a caller still answers as a stopped
actor's ref does."""

from __future__ import annotations

import gc

import pytest

from regiment.actors import Actor, ActorRef, open_actor_system
from regiment.actors._cell import Cell
from regiment.errors import ActorStopped

pytestmark = pytest.mark.anyio


class Echo(Actor[str, str]):
    async def receive(self, message: str) -> str:
        return message


class Parent(Actor[str, int]):
    """Spawns a child per message, asks it once, and stops it."""

    async def receive(self, message: str) -> int:
        child = await self.ctx.spawn(Echo, name=f"child {message}")
        assert await child.ask(message) == message
        await child.stop()
        return 1


def _cells(earlier: frozenset[int] = frozenset()) -> int:
    """Cells alive now, but those of ``earlier`` (ids of cells an earlier test left)."""
    return sum(1 for obj in gc.get_objects() if isinstance(obj, Cell) and id(obj) not in earlier)


async def test_stopped_actors_are_freed_without_the_cyclic_collector() -> None:
    gc.collect()
    # Cells an earlier test in this process still holds are not this test's to count.
    earlier = frozenset(id(obj) for obj in gc.get_objects() if isinstance(obj, Cell))
    gc.disable()
    try:
        async with open_actor_system() as system:
            parent = await system.spawn(Parent, name="parent")
            before = _cells()
            for index in range(5):
                echo = await system.spawn(Echo, name=f"echo {index}")
                assert await echo.ask("hi") == "hi"
                await echo.stop()
                del echo
                assert await parent.ask(str(index)) == 1
            # the parent's children list is pruned lazily, so up to its prune size stay
            assert _cells() - before <= 5
            await parent.stop()
            del parent
        assert _cells(earlier) == 0  # every cell freed by reference counting alone
    finally:
        gc.enable()


async def test_a_kept_ref_to_a_retired_actor_still_answers_as_stopped() -> None:
    async with open_actor_system() as system:
        ref: ActorRef[str, str] = await system.spawn(Echo, name="echo", capacity=3)
        await ref.stop()
        gc.collect()
        assert not ref.is_alive
        assert ref.name == "echo"
        assert ref.capacity == 3
        assert ref.mailbox_size == 0
        with pytest.raises(ActorStopped, match="'echo' has stopped"):
            await ref.send("late")
        with pytest.raises(ActorStopped):
            ref.send_nowait("late")
        with pytest.raises(ActorStopped):
            await ref.ask("late")
        await ref.stop()  # stopping again returns at once
