"""Envelopes: sender, message ids, and trace headers through a ContextPropagator."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from contextvars import ContextVar

import anyio
import msgspec
import pytest

from regiment.actors import Actor, ActorRef, ContextPropagator, Envelope, open_actor_system
from regiment.errors import ActorStopped

pytestmark = pytest.mark.anyio

trace: ContextVar[str] = ContextVar("trace", default="none")


class VarPropagator:
    """Carries the ``trace`` context variable in a ``traceparent`` header."""

    def __init__(self) -> None:
        self.injected: list[str] = []
        self.activated: list[dict[str, str]] = []

    def inject(self) -> dict[str, str]:
        self.injected.append(trace.get())
        return {"traceparent": trace.get()}

    @contextlib.contextmanager
    def activate(self, headers: Mapping[str, str]) -> Iterator[None]:
        self.activated.append(dict(headers))
        token = trace.set(headers.get("traceparent", "none"))
        try:
            yield
        finally:
            trace.reset(token)


Seen = tuple[str, dict[str, str]]


class Relay(Actor[str, None]):
    """Forwards each message to the next actor (if any) from a helper task."""

    def __init__(self, seen: list[Seen], next_hop: ActorRef[str, None] | None) -> None:
        self.seen = seen
        self.next_hop = next_hop

    async def receive(self, message: str) -> None:
        self.seen.append((trace.get(), dict(self.ctx.envelope.headers)))
        if self.next_hop is not None:
            self.ctx.start_soon(self.next_hop.send, message)  # the task inherits the context


class Last(Actor[str, None]):
    def __init__(self, seen: list[Seen], done: anyio.Event) -> None:
        self.seen = seen
        self.done = done

    async def receive(self, message: str) -> None:
        self.seen.append((trace.get(), dict(self.ctx.envelope.headers)))
        self.done.set()


async def test_headers_are_injected_on_send_and_activated_around_receive() -> None:
    propagator = VarPropagator()
    assert isinstance(propagator, ContextPropagator)
    seen: list[Seen] = []
    done = anyio.Event()
    async with open_actor_system(propagator=propagator) as system:
        last = await system.spawn(lambda: Last(seen, done), name="last")
        first = await system.spawn(lambda: Relay(seen, last), name="first")
        token = trace.set("00-trace-a-01")
        try:
            await first.send("hop")
        finally:
            trace.reset(token)
        await done.wait()
    assert propagator.injected == ["00-trace-a-01", "00-trace-a-01"]
    assert propagator.activated == [{"traceparent": "00-trace-a-01"}] * 2
    assert seen == [("00-trace-a-01", {"traceparent": "00-trace-a-01"})] * 2
    assert trace.get() == "none"


async def test_explicit_headers_win_and_skip_inject() -> None:
    propagator = VarPropagator()
    seen: list[Seen] = []
    done = anyio.Event()
    async with open_actor_system(propagator=propagator) as system:
        last = await system.spawn(lambda: Last(seen, done), name="last")
        await last.send("x", headers={"traceparent": "00-given-01", "baggage": "k=v"})
        await done.wait()
    assert propagator.injected == []
    assert seen == [("00-given-01", {"traceparent": "00-given-01", "baggage": "k=v"})]


class Inspector(Actor[str, Envelope[str, object]]):
    """Answers with the envelope it received; asks itself nothing."""

    async def receive(self, message: str) -> Envelope[str, object]:
        return self.ctx.envelope  # type: ignore[return-value]  # R is object here


class Caller(Actor[ActorRef[str, Envelope[str, object]], Envelope[str, object]]):
    """Asks the given inspector and returns what it saw."""

    async def receive(self, message: ActorRef[str, Envelope[str, object]]) -> Envelope[str, object]:
        return await message.ask("from an actor")


async def test_envelopes_carry_the_sender_and_unique_ids() -> None:
    async with open_actor_system() as system:
        inspector = await system.spawn(Inspector, name="inspector")
        caller = await system.spawn(Caller, name="caller")
        outside = await inspector.ask("from outside")
        inside = await caller.ask(inspector)
    assert outside.sender is None
    assert inside.sender is caller
    assert outside.message == "from outside"
    assert outside.headers == {}
    assert outside.message_id != inside.message_id


async def test_message_ids_read_as_the_system_prefix_and_a_number() -> None:
    """The id is text only when read (#22): an envelope holds its parts, and reads,
    compares and prints as one with a ``message_id`` field did; a dead letter keeps it."""
    async with open_actor_system() as system:
        inspector = await system.spawn(Inspector, name="inspector")
        first = await inspector.ask("one")
        second = await inspector.ask("two")
        await inspector.stop()
        with pytest.raises(ActorStopped):
            await inspector.send("late")
    prefix, number = first.message_id.split("-")
    assert len(prefix) == 8
    assert int(prefix, 16) >= 0
    assert second.message_id == f"{prefix}-{int(number) + 1}"
    (letter,) = system.dead_letters
    assert letter.message_id == f"{prefix}-{int(number) + 2}"
    assert "message_id" not in Envelope.__struct_fields__  # no text made a message
    assert first != second
    assert first == msgspec.structs.replace(first)
    assert repr(first) == (
        f"Envelope(message='one', sender=None, reply_to={first.reply_to!r}, "
        f"message_id='{first.message_id}', headers={{}})"
    )
