"""ask: replies, timeouts, handler errors, askers that went away."""

from __future__ import annotations

import anyio
import msgspec
import pytest

from regiment.actors import Actor, ActorRef, open_actor_system
from regiment.errors import ActorStopped, AskTimeout

pytestmark = pytest.mark.anyio


class Add(msgspec.Struct, frozen=True, kw_only=True):
    a: int
    b: int


class Hold(msgspec.Struct, frozen=True, kw_only=True):
    label: str


class Explode(msgspec.Struct, frozen=True, kw_only=True):
    pass


Calc = Add | Hold | Explode


class Calculator(Actor[Calc, int]):
    """Adds; holds on ``Hold`` until the gate opens; raises on ``Explode``."""

    def __init__(self, gate: anyio.Event, holding: anyio.Event, replies: list[int]) -> None:
        self.gate = gate
        self.holding = holding
        self.replies = replies

    async def receive(self, message: Calc) -> int:
        match message:
            case Add(a=a, b=b):
                return a + b
            case Hold():
                self.holding.set()
                await self.gate.wait()
                self.replies.append(7)
                return 7
            case Explode():
                raise ZeroDivisionError("boom")


def calculator(gate: anyio.Event, holding: anyio.Event, replies: list[int]) -> Calculator:
    return Calculator(gate, holding, replies)


async def test_ask_returns_the_handlers_value() -> None:
    async with open_actor_system() as system:
        ref = await system.spawn(lambda: calculator(anyio.Event(), anyio.Event(), []), name="calc")
        assert await ref.ask(Add(a=2, b=3)) == 5
        assert await ref.ask(Add(a=20, b=22), timeout=5) == 42


async def test_ask_timeout_names_the_actor_and_the_message_type() -> None:
    gate = anyio.Event()
    async with open_actor_system() as system:
        ref = await system.spawn(lambda: calculator(gate, anyio.Event(), []), name="calc")
        with pytest.raises(AskTimeout, match=r"actor 'calc' did not answer Hold within 0\.01 s"):
            await ref.ask(Hold(label="x"), timeout=0.01)
        gate.set()
        assert await ref.ask(Add(a=1, b=1)) == 2  # the late reply was not an error


async def test_a_reply_to_an_asker_that_was_cancelled_is_not_an_error() -> None:
    gate = anyio.Event()
    holding = anyio.Event()
    replies: list[int] = []
    async with open_actor_system() as system:
        ref = await system.spawn(lambda: calculator(gate, holding, replies), name="calc")
        with anyio.CancelScope() as scope:
            async with anyio.create_task_group() as tg:
                tg.start_soon(ref.ask, Hold(label="leaves"))
                await holding.wait()
                scope.cancel()
        assert scope.cancelled_caught
        gate.set()  # the handler now replies to nobody
        assert await ref.ask(Add(a=3, b=4)) == 7
        assert replies == [7]
        assert ref.is_alive
    assert system.dead_letter_count == 0


async def test_ask_raises_the_handlers_exception_and_the_actor_is_restarted() -> None:
    made: list[int] = []

    def factory() -> Calculator:
        made.append(1)
        return calculator(anyio.Event(), anyio.Event(), [])

    async with open_actor_system() as system:
        ref = await system.spawn(factory, name="calc")
        with pytest.raises(ZeroDivisionError, match="boom"):
            await ref.ask(Explode())
        assert await ref.ask(Add(a=1, b=2)) == 3
    assert len(made) == 2


async def test_pending_asks_fail_with_actor_stopped_when_the_system_closes() -> None:
    holding = anyio.Event()
    outcomes: list[str] = []

    async def asker(ref: ActorRef[Calc, int], message: Calc) -> None:
        try:
            await ref.ask(message)
        except ActorStopped as exc:
            outcomes.append(str(exc))

    async with anyio.create_task_group() as outside, open_actor_system() as system:
        ref = await system.spawn(
            lambda: calculator(anyio.Event(), holding, []), name="calc", capacity=4
        )
        outside.start_soon(asker, ref, Hold(label="in flight"))
        await holding.wait()
        outside.start_soon(asker, ref, Add(a=1, b=1))
        await anyio.wait_all_tasks_blocked()
        assert ref.mailbox_size == 1
    assert sorted(outcomes) == [
        "actor 'calc' stopped before answering Add",
        "actor 'calc' stopped before answering Hold",
    ]
    assert [(d.message, d.reason) for d in system.dead_letters] == [(Add(a=1, b=1), "cancelled")]
