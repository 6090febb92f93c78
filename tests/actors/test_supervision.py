"""Supervision: restarts under a policy, escalation, child failures, cancellation."""

from __future__ import annotations

import anyio
import pytest

from regiment.actors import (
    Actor,
    ActorRef,
    ChildFailed,
    RestartPolicy,
    open_actor_system,
)
from regiment.errors import ActorFailed

pytestmark = pytest.mark.anyio


class Boom(Exception):
    """What the test actors raise."""


class Counter(Actor[str, int]):
    """``"inc"`` counts up from a fresh zero per instance; ``"fail"`` raises."""

    def __init__(self, births: list[int]) -> None:
        births.append(len(births) + 1)
        self.count = 0

    async def receive(self, message: str) -> int:
        if message == "fail":
            raise Boom(f"failure at count {self.count}")
        self.count += 1
        return self.count


class Clock:
    """A clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


async def fail(ref: ActorRef[str, int]) -> None:
    """Make the actor fail, and let its supervisor act before going on."""
    with pytest.raises(Boom):
        await ref.ask("fail")
    await anyio.wait_all_tasks_blocked()


async def test_restarts_up_to_the_limit_then_escalates_at_limit_plus_one() -> None:
    births: list[int] = []
    clock = Clock()
    policy = RestartPolicy(max_restarts=2, within=10.0)

    async def scenario() -> None:
        async with open_actor_system(clock=clock) as system:
            ref = await system.spawn(lambda: Counter(births), name="counter", restart=policy)
            for _ in range(2):
                assert await ref.ask("inc") == 1
                await fail(ref)
                clock.now += 1.0
            assert await ref.ask("inc") == 1  # restarted twice, fresh state each time
            assert births == [1, 2, 3]
            await fail(ref)  # the third failure inside the window escalates
            await anyio.sleep_forever()  # cancelled by the escalation

    with pytest.raises(ActorFailed, match="'counter' failed 3 times within 10 s") as caught:
        await scenario()
    assert isinstance(caught.value.__cause__, Boom)
    assert births == [1, 2, 3]


async def test_failures_that_left_the_window_do_not_count() -> None:
    births: list[int] = []
    clock = Clock()
    policy = RestartPolicy(max_restarts=1, within=5.0)
    async with open_actor_system(clock=clock) as system:
        ref = await system.spawn(lambda: Counter(births), name="counter", restart=policy)
        for _ in range(4):
            await fail(ref)
            clock.now += 5.0  # each failure is outside the previous one's window
        assert await ref.ask("inc") == 1
        assert ref.is_alive
    assert births == [1, 2, 3, 4, 5]


async def test_a_restarted_actor_keeps_its_queued_messages() -> None:
    births: list[int] = []
    results: list[int] = []
    async with open_actor_system() as system:
        ref = await system.spawn(lambda: Counter(births), name="counter", capacity=8)

        async def ask_and_keep(message: str) -> None:
            results.append(await ref.ask(message))

        ref.send_nowait("inc")
        ref.send_nowait("fail")
        async with anyio.create_task_group() as tg:
            for _ in range(3):
                tg.start_soon(ask_and_keep, "inc")
                await anyio.wait_all_tasks_blocked()
    assert births == [1, 2]
    assert results == [1, 2, 3]  # handled by the fresh instance, in order
    assert system.dead_letter_count == 0


async def test_max_restarts_zero_escalates_the_first_failure() -> None:
    births: list[int] = []

    async def scenario() -> None:
        async with open_actor_system() as system:
            ref = await system.spawn(
                lambda: Counter(births), name="counter", restart=RestartPolicy(max_restarts=0)
            )
            await fail(ref)
            await anyio.sleep_forever()

    with pytest.raises(ActorFailed, match="allows 0 restarts"):
        await scenario()
    assert births == [1]


class Parent(Actor[str, ActorRef[str, int]]):
    """Spawns one child that may not restart; records escalations when told to."""

    def __init__(self, failures: list[ChildFailed] | None, child_births: list[int]) -> None:
        self.failures = failures
        self.child_births = child_births
        self.child: ActorRef[str, int] | None = None

    async def on_start(self) -> None:
        births = self.child_births
        self.child = await self.ctx.spawn(
            lambda: Counter(births), name="child", restart=RestartPolicy(max_restarts=0)
        )

    async def receive(self, message: str) -> ActorRef[str, int]:
        assert self.child is not None
        return self.child

    async def on_child_failed(self, failure: ChildFailed) -> None:
        if self.failures is None:
            await super().on_child_failed(failure)
        else:
            self.failures.append(failure)


async def test_a_child_failure_beyond_its_policy_reaches_the_parents_on_child_failed() -> None:
    failures: list[ChildFailed] = []
    async with open_actor_system() as system:
        parent = await system.spawn(lambda: Parent(failures, []), name="parent")
        child = await parent.ask("child?")
        await fail(child)
        assert await parent.ask("child?") is child
        assert parent.is_alive
    assert len(failures) == 1
    assert failures[0].child is child
    assert isinstance(failures[0].error, Boom)
    assert not child.is_alive


async def test_by_default_the_parent_fails_too_and_restarts_with_a_fresh_child() -> None:
    child_births: list[int] = []
    async with open_actor_system() as system:
        parent = await system.spawn(lambda: Parent(None, child_births), name="parent")
        first_child = await parent.ask("child?")
        await fail(first_child)
        second_child = await parent.ask("child?")
        assert second_child is not first_child
        assert await second_child.ask("inc") == 1
    assert child_births == [1, 2]


async def test_an_escalation_through_the_parent_leaves_the_system_as_actor_failed() -> None:
    policy = RestartPolicy(max_restarts=0)

    async def scenario() -> None:
        async with open_actor_system() as system:
            parent = await system.spawn(lambda: Parent(None, []), name="parent", restart=policy)
            await fail(await parent.ask("child?"))
            await anyio.sleep_forever()

    with pytest.raises(ActorFailed, match="'parent'") as caught:
        await scenario()
    assert isinstance(caught.value.__cause__, Boom)


class Background(Actor[str, str]):
    """Starts a helper task that fails when the gate opens."""

    def __init__(self, gates: list[anyio.Event]) -> None:
        self.gate = anyio.Event()
        gates.append(self.gate)

    async def on_start(self) -> None:
        self.ctx.start_soon(self.helper, name="helper")

    async def helper(self) -> None:
        await self.gate.wait()
        raise Boom("helper failed")

    async def receive(self, message: str) -> str:
        return message


async def test_a_failing_helper_task_is_a_failure_of_its_actor() -> None:
    gates: list[anyio.Event] = []
    async with open_actor_system() as system:
        ref = await system.spawn(lambda: Background(gates), name="bg")
        assert await ref.ask("before") == "before"
        gates[0].set()
        await anyio.wait_all_tasks_blocked()
        assert len(gates) == 2  # restarted with a fresh instance and helper
        assert await ref.ask("after") == "after"
    assert not ref.is_alive


async def test_spawn_raises_actor_failed_when_the_first_on_start_fails() -> None:
    class Broken(Actor[str, None]):
        async def on_start(self) -> None:
            raise Boom("cannot start")

        async def receive(self, message: str) -> None:
            return None

    async with open_actor_system() as system:
        with pytest.raises(ActorFailed, match="'broken' failed to start") as caught:
            await system.spawn(Broken, name="broken")
        assert isinstance(caught.value.__cause__, Boom)
        ref = await system.spawn(lambda: Counter([]), name="fine")
        assert await ref.ask("inc") == 1


async def test_cancellation_is_never_a_failure() -> None:
    births: list[int] = []
    child_births: list[int] = []
    holding = anyio.Event()

    class Sleeper(Actor[str, None]):
        def __init__(self) -> None:
            births.append(1)

        async def on_start(self) -> None:
            await self.ctx.spawn(lambda: Counter(child_births), name="child")

        async def receive(self, message: str) -> None:
            with anyio.move_on_after(0):  # a cancellation the handler caught itself
                await anyio.sleep_forever()
            holding.set()
            await anyio.sleep_forever()  # cancelled when the system closes

    async with open_actor_system() as system:
        ref = await system.spawn(Sleeper, name="sleeper", restart=RestartPolicy(max_restarts=0))
        await ref.send("sleep")
        await holding.wait()
    assert births == [1]
    assert child_births == [1]
