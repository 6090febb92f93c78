"""receive_here: an idle actor may handle a ``send_here`` in the sender's task, awaiting."""

from __future__ import annotations

from collections.abc import Awaitable

import anyio
import pytest

from regiment.actors import Actor, Envelope, open_actor_system
from regiment.errors import ActorStopped, MailboxFull

pytestmark = pytest.mark.anyio


class Here(Actor[str, None]):
    """Handles ``here:`` messages in the sender's task (they await); the rest in ``receive``."""

    def __init__(self, log: list[str], gate: anyio.Event) -> None:
        self.log = log
        self.gate = gate

    def receive_here(self, envelope: Envelope[str, None]) -> Awaitable[None] | None:
        if envelope.message.startswith("here:"):
            return self._here(envelope.message)
        return None

    async def _here(self, message: str) -> None:
        await anyio.lowlevel.checkpoint()  # it may await: the sender awaits with it
        self.log.append(f"here {message} in {anyio.get_current_task().name}")

    async def receive(self, message: str) -> None:
        if message == "block":
            await self.gate.wait()
        self.log.append(f"receive {message}")


async def test_an_idle_actor_handles_it_in_the_senders_task() -> None:
    log: list[str] = []
    async with open_actor_system() as system:
        ref = await system.spawn(lambda: Here(log, anyio.Event()), name="here")
        await anyio.wait_all_tasks_blocked()  # the actor waits for mail
        handling = ref.send_here("here:1")
        assert handling is not None
        await handling
        me = anyio.get_current_task().name
        assert log == [f"here here:1 in {me}"]
        assert ref.send_here("plain") is None  # declined: queued for receive()
        await anyio.wait_all_tasks_blocked()
        assert log[-1] == "receive plain"


async def test_a_busy_actor_gets_it_queued_in_order() -> None:
    log: list[str] = []
    gate = anyio.Event()
    async with open_actor_system() as system:
        ref = await system.spawn(lambda: Here(log, gate), name="here")
        await anyio.wait_all_tasks_blocked()
        await ref.send("block")
        await anyio.wait_all_tasks_blocked()  # its handler waits: the actor is busy
        assert ref.send_here("here:while-busy") is None  # queued, not handled here
        assert log == []
        gate.set()
        await anyio.wait_all_tasks_blocked()
        assert log == ["receive block", "receive here:while-busy"]


async def test_a_full_mailbox_raises_and_a_stopped_actor_refuses() -> None:
    gate = anyio.Event()
    async with open_actor_system() as system:
        ref = await system.spawn(lambda: Here([], gate), name="here", capacity=1)
        await anyio.wait_all_tasks_blocked()
        await ref.send("block")
        await anyio.wait_all_tasks_blocked()
        assert ref.send_here("queued") is None
        with pytest.raises(MailboxFull, match="'here' is full"):
            ref.send_here("here:no room")
        gate.set()
        await ref.stop()
        with pytest.raises(ActorStopped, match="'here' has stopped"):
            ref.send_here("here:too late")
