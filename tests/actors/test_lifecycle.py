"""Starting and stopping: graceful stop, leaving the system block, no task left behind."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import anyio
import pytest

from regiment.actors import Actor, ActorRef, open_actor_system
from regiment.errors import ActorFailed, ActorStopped, ConfigError

pytestmark = pytest.mark.anyio


class Recorder(Actor[str, str]):
    """Logs its life to a shared list; ``"wait"`` blocks until the gate opens."""

    def __init__(self, name: str, log: list[str], gate: anyio.Event) -> None:
        self.name = name
        self.log = log
        self.gate = gate

    async def on_start(self) -> None:
        self.log.append(f"{self.name} start")

    async def on_stop(self) -> None:
        await anyio.lowlevel.checkpoint()  # shielded: this await must not be cancelled
        self.log.append(f"{self.name} stop")

    async def receive(self, message: str) -> str:
        if message == "wait":
            await self.gate.wait()
        elif message == "stop yourself":
            await self.ctx.self_ref.stop()
        self.log.append(f"{self.name} got {message}")
        return message


async def test_graceful_stop_refuses_new_messages_and_drains_the_queued_ones() -> None:
    log: list[str] = []
    gate = anyio.Event()
    async with open_actor_system() as system:
        ref = await system.spawn(lambda: Recorder("r", log, gate), name="r", capacity=8)
        for message in ("wait", "a", "b"):
            ref.send_nowait(message)
        async with anyio.create_task_group() as tg:
            tg.start_soon(ref.stop)
            await anyio.wait_all_tasks_blocked()
            assert not ref.is_alive
            with pytest.raises(ActorStopped):
                await ref.send("late")
            gate.set()
        assert log == ["r start", "r got wait", "r got a", "r got b", "r stop"]
    assert [(d.message, d.reason) for d in system.dead_letters] == [("late", "stopped")]


async def test_an_actor_can_stop_itself() -> None:
    log: list[str] = []
    async with open_actor_system() as system:
        ref = await system.spawn(lambda: Recorder("r", log, anyio.Event()), name="r")
        ref.send_nowait("stop yourself")
        ref.send_nowait("queued before the stop")
        await ref.stop()
    assert log == ["r start", "r got stop yourself", "r got queued before the stop", "r stop"]


class Family(Actor[str, str]):
    """A parent with two children, all logging to the same list."""

    def __init__(self, log: list[str], gate: anyio.Event) -> None:
        self.log = log
        self.gate = gate
        self.kids: list[ActorRef[str, str]] = []

    async def on_start(self) -> None:
        for kid in ("kid1", "kid2"):
            self.kids.append(await self.ctx.spawn(self.recorder(kid), name=kid))
        self.ctx.start_soon(anyio.sleep_forever, name="idle helper")

    def recorder(self, name: str) -> Callable[[], Recorder]:
        return lambda: Recorder(name, self.log, self.gate)

    async def on_stop(self) -> None:
        self.log.append("parent stop")

    async def receive(self, message: str) -> str:
        for kid in self.kids:
            await kid.send(message)
        return message


async def test_stopping_a_parent_stops_its_children_first_newest_first() -> None:
    log: list[str] = []
    gate = anyio.Event()
    gate.set()
    async with open_actor_system() as system:
        parent = await system.spawn(lambda: Family(log, gate), name="parent")
        await parent.send("hello")
        await parent.stop()
    stops = ["kid2 stop", "kid1 stop", "parent stop"]
    assert log[:2] == ["kid1 start", "kid2 start"]
    assert sorted(log) == sorted([*log[:2], "kid1 got hello", "kid2 got hello", *stops])
    assert [line for line in log if line.endswith("stop")] == stops
    for kid in ("kid1", "kid2"):  # each child drained its mailbox before stopping
        assert log.index(f"{kid} got hello") < log.index(f"{kid} stop")


def task_ids() -> set[int]:
    return {task.id for task in anyio.get_running_tasks()}


async def test_leaving_the_block_while_actors_are_busy_leaves_no_task_behind(
    anyio_backend: str,
) -> None:
    log: list[str] = []
    gate = anyio.Event()  # never opened: handlers are stuck when the block ends
    before = task_ids()
    asyncio_before = set(asyncio.all_tasks()) if anyio_backend == "asyncio" else set()
    async with open_actor_system() as system:
        parent = await system.spawn(lambda: Family(log, gate), name="parent")
        solo = await system.spawn(lambda: Recorder("solo", log, gate), name="solo", capacity=4)
        await parent.send("wait")
        for _ in range(4):
            await solo.send("wait")
        await anyio.wait_all_tasks_blocked()
        assert len(task_ids() - before) >= 5  # 4 actors and a helper
        assert solo.mailbox_size == 3
    assert task_ids() == before
    if anyio_backend == "asyncio":
        assert set(asyncio.all_tasks()) == asyncio_before
    # in-flight handlers were cancelled, every on_stop ran, children before parents
    assert not [line for line in log if line.endswith("got wait")]
    assert sorted(log[-4:]) == ["kid1 stop", "kid2 stop", "parent stop", "solo stop"]
    assert log.index("parent stop") > max(log.index("kid1 stop"), log.index("kid2 stop"))
    assert [(d.recipient, d.reason) for d in system.dead_letters] == [("solo", "cancelled")] * 3
    assert not parent.is_alive
    assert not solo.is_alive


async def test_an_error_in_the_body_comes_out_as_itself() -> None:
    log: list[str] = []

    async def scenario() -> None:
        async with open_actor_system() as system:
            await system.spawn(lambda: Recorder("r", log, anyio.Event()), name="r")
            raise KeyError("mine")

    with pytest.raises(KeyError, match="mine"):
        await scenario()
    assert log == ["r start", "r stop"]


async def test_an_exception_in_on_stop_leaves_the_system_as_actor_failed() -> None:
    class BadStop(Actor[str, None]):
        async def on_stop(self) -> None:
            raise RuntimeError("cleanup broke")

        async def receive(self, message: str) -> None:
            return None

    with pytest.raises(ActorFailed, match="'bad' raised in on_stop") as caught:
        async with open_actor_system() as system:
            await system.spawn(BadStop, name="bad")
    assert isinstance(caught.value.__cause__, RuntimeError)


async def test_spawning_after_the_system_closed_is_refused() -> None:
    async with open_actor_system() as system:
        pass
    with pytest.raises(ConfigError, match="the actor system is closed"):
        await system.spawn(lambda: Recorder("r", [], anyio.Event()), name="late")


class _Payload:
    """Stands for what an actor's factory captures (a run's whole state, say)."""


class _Holder(Actor[str, None]):
    def __init__(self, payload: _Payload) -> None:
        self.payload = payload

    async def receive(self, message: str) -> None:
        pass


async def test_a_stopped_actor_lets_go_of_what_its_factory_held_without_a_collection() -> None:
    import functools
    import gc
    import weakref

    payload = _Payload()
    alive = weakref.ref(payload)
    gc.disable()  # only reference counting frees things in this test
    try:
        async with open_actor_system() as system:
            ref: ActorRef[str, None] = await system.spawn(
                functools.partial(_Holder, payload), name="holder"
            )
            del payload
            await ref.send("hello")
            await ref.stop()
            await anyio.wait_all_tasks_blocked()
            # The ref is still held here, and it points at the actor's cell.
            assert not ref.is_alive
            assert alive() is None
    finally:
        gc.enable()
