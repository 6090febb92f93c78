"""receive_now: an idle actor may take a sent message in the sender's task."""

from __future__ import annotations

import anyio
import pytest

from regiment.actors import Actor, Envelope, open_actor_system
from regiment.actors._mailbox import Mailbox
from regiment.actors._wakeup import wakeup_factory

pytestmark = pytest.mark.anyio


class Taker(Actor[str, str]):
    """Takes ``now:`` messages at once; everything else goes through ``receive``."""

    def __init__(self, log: list[str], gate: anyio.Event) -> None:
        self.log = log
        self.gate = gate

    def receive_now(self, envelope: Envelope[str, str]) -> bool:
        if envelope.message.startswith("now:"):
            self.log.append(f"inline {envelope.message}")
            return True
        return False

    async def receive(self, message: str) -> str:
        if message == "block":
            await self.gate.wait()
        self.log.append(f"receive {message}")
        return message


async def test_an_idle_actor_takes_a_send_before_the_sender_goes_on() -> None:
    log: list[str] = []
    async with open_actor_system() as system:
        ref = await system.spawn(lambda: Taker(log, anyio.Event()), name="taker")
        await anyio.wait_all_tasks_blocked()  # the actor waits for mail
        await ref.send("now:1")
        ref.send_nowait("now:2")
        # handled in this task, before it yielded: the actor's task never woke
        assert log == ["inline now:1", "inline now:2"]
        await ref.send("later")
        assert log == ["inline now:1", "inline now:2"]  # declined: queued for receive()
        await anyio.wait_all_tasks_blocked()
        assert log[-1] == "receive later"


async def test_a_busy_actor_or_a_queued_mailbox_keeps_the_order() -> None:
    log: list[str] = []
    gate = anyio.Event()
    async with open_actor_system() as system:
        ref = await system.spawn(lambda: Taker(log, gate), name="taker")
        await anyio.wait_all_tasks_blocked()
        await ref.send("block")  # the handler waits: the actor is busy
        await anyio.wait_all_tasks_blocked()
        await ref.send("now:while-busy")  # not taken now: it would jump the queue
        await ref.send("after")
        assert log == []
        gate.set()
        await anyio.wait_all_tasks_blocked()
        assert log == ["receive block", "receive now:while-busy", "receive after"]


async def test_an_ask_is_never_taken_inline() -> None:
    log: list[str] = []
    async with open_actor_system() as system:
        ref = await system.spawn(lambda: Taker(log, anyio.Event()), name="taker")
        await anyio.wait_all_tasks_blocked()
        assert await ref.ask("now:asked") == "now:asked"
        assert log == ["receive now:asked"]


async def test_a_wake_while_the_receiver_is_not_waiting_is_not_lost() -> None:
    # A child's failure wakes its parent's loop; if the parent is not waiting at
    # that moment (it lingers after an ask), its next wait must return at once.
    mailbox: Mailbox[str] = Mailbox(4, wakeup_factory())
    mailbox.wake()
    with anyio.fail_after(5):
        assert await mailbox.get(linger=True) is None
        mailbox.put_nowait("mail")
        assert await mailbox.get() == "mail"
