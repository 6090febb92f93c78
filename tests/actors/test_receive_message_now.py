"""receive_message_now: an idle actor offered a sent message before any envelope exists."""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from typing import Never

import anyio
import pytest

from regiment.actors import Actor, ActorRef, ContextPropagator, open_actor_system

pytestmark = pytest.mark.anyio

Offer = tuple[str, str | None, dict[str, str]]


class Taker(Actor[str, str]):
    """Takes ``now:`` messages before they are enveloped; the rest go through ``receive``."""

    def __init__(self, offers: list[Offer], log: list[str], gate: anyio.Event) -> None:
        self.offers, self.log, self.gate = offers, log, gate

    def receive_message_now(
        self, message: str, sender: ActorRef[Never, object] | None, headers: Mapping[str, str]
    ) -> bool:
        self.offers.append((message, None if sender is None else sender.name, dict(headers)))
        return message.startswith("now:")

    async def receive(self, message: str) -> str:
        if message == "block":
            await self.gate.wait()
        envelope = self.ctx.envelope
        self.log.append(f"receive {message} {dict(envelope.headers)}")
        return message


class Sender(Actor[str, None]):
    """Sends each message it gets on to ``to``, as itself, with a header."""

    def __init__(self, to: ActorRef[str, str]) -> None:
        self.to = to

    async def receive(self, message: str) -> None:
        self.to.send_nowait(message, headers={"from": "sender"})


class Stamp(ContextPropagator):
    def inject(self) -> dict[str, str]:
        return {"stamp": "injected"}

    def activate(self, headers: Mapping[str, str]) -> contextlib.AbstractContextManager[None]:
        return contextlib.nullcontext()


async def test_each_send_offers_the_message_before_it_is_enveloped() -> None:
    offers: list[Offer] = []
    log: list[str] = []
    async with open_actor_system() as system:
        ref = await system.spawn(lambda: Taker(offers, log, anyio.Event()), name="taker")
        await anyio.wait_all_tasks_blocked()  # the actor waits for mail
        await ref.send("now:1")
        ref.send_nowait("now:2", headers={"k": "v"})
        assert ref.send_here("now:3") is None
        # taken in this task, with no envelope: receive() never saw them
        assert offers == [("now:1", None, {}), ("now:2", None, {"k": "v"}), ("now:3", None, {})]
        ref.send_nowait("later", headers={"k": "w"})  # declined: enveloped, queued
        await anyio.wait_all_tasks_blocked()
        assert log == ["receive later {'k': 'w'}"]
        assert await ref.ask("now:asked") == "now:asked"  # an ask is never offered
        assert [offer[0] for offer in offers] == ["now:1", "now:2", "now:3", "later"]


async def test_the_sender_is_the_sending_actor() -> None:
    offers: list[Offer] = []
    async with open_actor_system() as system:
        taker = await system.spawn(lambda: Taker(offers, [], anyio.Event()), name="taker")
        sender = await system.spawn(lambda: Sender(taker), name="sender")
        await sender.send("now:relayed")
        await anyio.wait_all_tasks_blocked()
        assert offers == [("now:relayed", "sender", {"from": "sender"})]


async def test_a_busy_actor_is_not_offered_and_keeps_the_order() -> None:
    offers: list[Offer] = []
    log: list[str] = []
    gate = anyio.Event()
    async with open_actor_system() as system:
        ref = await system.spawn(lambda: Taker(offers, log, gate), name="taker")
        await anyio.wait_all_tasks_blocked()
        await ref.send("block")  # offered, declined, queued: the handler waits
        await anyio.wait_all_tasks_blocked()
        await ref.send("now:while-busy")  # not offered: it would jump the queue
        assert [offer[0] for offer in offers] == ["block"]
        gate.set()
        await anyio.wait_all_tasks_blocked()
        assert log == ["receive block {}", "receive now:while-busy {}"]


async def test_a_propagator_s_headers_are_never_skipped() -> None:
    # With no headers given, the propagator's would be injected into the envelope: such
    # a message is not offered; one given headers is (they are what it carries).
    offers: list[Offer] = []
    log: list[str] = []
    async with open_actor_system(propagator=Stamp()) as system:
        ref = await system.spawn(lambda: Taker(offers, log, anyio.Event()), name="taker")
        await anyio.wait_all_tasks_blocked()
        ref.send_nowait("now:bare")
        await anyio.wait_all_tasks_blocked()
        ref.send_nowait("now:given", headers={"k": "v"})
        assert offers == [("now:given", None, {"k": "v"})]
        assert log == ["receive now:bare {'stamp': 'injected'}"]
