"""A parent that spawns many short-lived children keeps only a bounded list of
them (stopped ones are dropped, amortised), and still stops the live ones."""

from __future__ import annotations

import pytest

from regiment.actors import Actor, ActorRef, open_actor_system

pytestmark = pytest.mark.anyio


class Echo(Actor[str, str]):
    async def receive(self, message: str) -> str:
        return message


class Spawner(Actor[str, int]):
    """``"spawn"`` makes a child, asks it once and stops it; ``"keep"`` makes one
    and keeps it running; the reply is how many children the parent still lists."""

    def __init__(self, kept: list[ActorRef[str, str]]) -> None:
        self.kept = kept

    async def receive(self, message: str) -> int:
        child = await self.ctx.spawn(Echo, name=f"echo-{message}")
        assert await child.ask(message) == message
        if message == "keep":
            self.kept.append(child)
        else:
            await child.stop()
        return len(self.ctx._incarnation.children)


async def test_stopped_children_are_not_kept_forever() -> None:
    kept: list[ActorRef[str, str]] = []
    async with open_actor_system() as system:
        parent = await system.spawn(lambda: Spawner(kept), name="parent")
        listed = [await parent.ask("keep") for _ in range(5)]
        listed += [await parent.ask("spawn") for _ in range(500)]
        # 5 live children: the list never grows past twice what the last prune left.
        assert max(listed) <= 2 * 16
        assert listed[-1] >= 5
        await parent.stop()
        # Stopping the parent stopped the children it kept alive.
        assert all(not ref.is_alive for ref in kept)
