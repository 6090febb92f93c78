"""Bounded mailboxes: backpressure, send_nowait, dead letters."""

from __future__ import annotations

import anyio
import pytest

from regiment.actors import Actor, ActorRef, DeadLetter, open_actor_system
from regiment.errors import ActorStopped, MailboxFull

pytestmark = pytest.mark.anyio


class SlowCounter(Actor[int, None]):
    """Takes ten scheduling rounds per message, while the producer takes one."""

    def __init__(self, seen: list[int], sizes: list[int]) -> None:
        self.seen = seen
        self.sizes = sizes

    async def receive(self, message: int) -> None:
        self.sizes.append(self.ctx.self_ref.mailbox_size)
        for _ in range(10):
            await anyio.lowlevel.checkpoint()
        self.seen.append(message)


class Gate(Actor[str, str]):
    """Blocks every message until the test opens the gate."""

    def __init__(self, gate: anyio.Event, handled: list[str]) -> None:
        self.gate = gate
        self.handled = handled

    async def receive(self, message: str) -> str:
        await self.gate.wait()
        self.handled.append(message)
        return message


async def test_mailbox_never_holds_more_than_capacity_under_a_fast_producer() -> None:
    seen: list[int] = []
    sizes: list[int] = []
    async with open_actor_system() as system:
        ref = await system.spawn(lambda: SlowCounter(seen, sizes), name="slow", capacity=4)
        for i in range(200):
            await ref.send(i)
            sizes.append(ref.mailbox_size)
        await ref.stop()
    assert seen == list(range(200))
    assert max(sizes) <= 4
    assert max(sizes) == 4  # the producer really was held back at capacity


async def test_send_nowait_raises_mailbox_full_and_queues_nothing() -> None:
    gate = anyio.Event()
    handled: list[str] = []
    async with open_actor_system() as system:
        ref = await system.spawn(lambda: Gate(gate, handled), name="gate", capacity=2)
        ref.send_nowait("busy")  # taken by the handler, which then blocks
        await anyio.wait_all_tasks_blocked()
        ref.send_nowait("a")
        ref.send_nowait("b")
        with pytest.raises(MailboxFull, match="'gate' is full \\(2 messages\\)"):
            ref.send_nowait("c")
        assert ref.mailbox_size == 2
        gate.set()
        await ref.stop()
    assert handled == ["busy", "a", "b"]
    assert system.dead_letter_count == 0


async def test_messages_to_a_stopped_actor_become_counted_dead_letters() -> None:
    gate = anyio.Event()
    gate.set()
    letters: list[DeadLetter] = []
    async with open_actor_system(on_dead_letter=letters.append) as system:
        ref: ActorRef[str, str] = await system.spawn(lambda: Gate(gate, []), name="gone")
        await ref.stop()
        assert not ref.is_alive
        with pytest.raises(ActorStopped, match="'gone' has stopped"):
            await ref.send("one")
        with pytest.raises(ActorStopped):
            ref.send_nowait("two")
        with pytest.raises(ActorStopped):
            await ref.ask("three")
    assert system.dead_letter_count == 3
    assert [(d.recipient, d.message, d.reason) for d in system.dead_letters] == [
        ("gone", "one", "stopped"),
        ("gone", "two", "stopped"),
        ("gone", "three", "stopped"),
    ]
    assert letters == list(system.dead_letters)


async def test_dead_letters_keep_the_newest_up_to_the_limit_but_count_all() -> None:
    gate = anyio.Event()
    gate.set()
    async with open_actor_system(dead_letter_limit=2) as system:
        ref = await system.spawn(lambda: Gate(gate, []), name="gone")
        await ref.stop()
        for word in ("a", "b", "c"):
            with pytest.raises(ActorStopped):
                ref.send_nowait(word)
    assert system.dead_letter_count == 3
    assert [d.message for d in system.dead_letters] == ["b", "c"]


async def test_a_sender_waiting_on_a_full_mailbox_gets_actor_stopped_when_it_stops() -> None:
    gate = anyio.Event()
    outcome: list[str] = []
    async with open_actor_system() as system:
        ref = await system.spawn(lambda: Gate(gate, []), name="full", capacity=1)
        ref.send_nowait("busy")
        await anyio.wait_all_tasks_blocked()
        ref.send_nowait("queued")

        async def blocked_sender() -> None:
            try:
                await ref.send("waiting")
            except ActorStopped:
                outcome.append("refused")

        async with anyio.create_task_group() as tg:
            tg.start_soon(blocked_sender)
            await anyio.wait_all_tasks_blocked()
            tg.start_soon(ref.stop)
            await anyio.wait_all_tasks_blocked()
            gate.set()
    assert outcome == ["refused"]
    assert [(d.message, d.reason) for d in system.dead_letters] == [("waiting", "stopped")]
