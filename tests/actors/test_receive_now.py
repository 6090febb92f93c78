"""receive_now (an idle actor takes a sent message in the sender's task) and spawn_soon."""

from __future__ import annotations

import anyio
import pytest

from regiment.actors import (
    Actor,
    ActorRef,
    ChildFailed,
    Envelope,
    RestartPolicy,
    open_actor_system,
)

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


class Spawner(Actor[str, ActorRef[str, str]]):
    """Spawns children with spawn_soon; records the failures escalated to it."""

    def __init__(self, log: list[str], failed: list[str], escalated: anyio.Event) -> None:
        self.log = log
        self.failed = failed
        self.escalated = escalated

    async def receive(self, message: str) -> ActorRef[str, str]:
        if message == "broken":
            return self.ctx.spawn_soon(
                _broken, name="broken", restart=RestartPolicy(max_restarts=0)
            )
        return self.ctx.spawn_soon(lambda: Taker(self.log, anyio.Event()), name=message)

    async def on_child_failed(self, failure: ChildFailed) -> None:
        self.failed.append(f"{failure.child.name}: {failure.error}")
        self.escalated.set()


def _broken() -> Actor[str, str]:
    raise ValueError("no instance")


async def test_spawn_soon_returns_before_the_child_starts_and_mail_waits_for_it() -> None:
    log: list[str] = []
    failed: list[str] = []
    async with open_actor_system() as system:
        parent = await system.spawn(lambda: Spawner(log, failed, anyio.Event()), name="parent")
        child = await parent.ask("child")
        await child.send("early")  # queued before the child's task has run
        assert await child.ask("asked") == "asked"
        assert log == ["receive early", "receive asked"]
        assert failed == []


async def test_a_child_that_cannot_start_fails_to_its_parent() -> None:
    failed: list[str] = []
    escalated = anyio.Event()
    async with open_actor_system() as system:
        parent = await system.spawn(lambda: Spawner([], failed, escalated), name="parent")
        child = await parent.ask("broken")
        with anyio.fail_after(5):
            await escalated.wait()
        assert failed == ["broken: no instance"]
        assert not child.is_alive
