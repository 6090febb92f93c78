"""spawn_dormant: a child with no task of its own until it needs one."""

from __future__ import annotations

import contextvars
import sys
from collections.abc import Awaitable, Callable

import anyio
import anyio.lowlevel
import pytest

from regiment.actors import (
    Actor,
    ActorRef,
    ChildFailed,
    Envelope,
    RestartPolicy,
    in_context,
    open_actor_system,
)
from regiment.actors._ref import current_actor
from regiment.errors import ActorFailed, ActorStopped, ConfigError

pytestmark = pytest.mark.anyio

# Set by a handler around its start_soon, as a run's planner sets a guard's purse.
_MARK: contextvars.ContextVar[str] = contextvars.ContextVar("test_dormant_mark", default="unset")


class Boom(Exception):
    """What the test actors raise."""


def tasks_named(name: str) -> int:
    return sum(1 for task in anyio.get_running_tasks() if task.name == name)


class Sleepy(Actor[str, None]):
    """Takes ``now:`` messages in the sender's task, ``here:`` ones awaiting there;
    ``help:`` starts a helper task, ``stop:`` stops itself, the rest go to ``receive``."""

    def __init__(self, log: list[str]) -> None:
        self.log = log
        self.context: contextvars.Context | None = None

    async def on_start(self) -> None:
        self.context = contextvars.copy_context()  # the actor's own context variables

    def receive_now(self, envelope: Envelope[str, None]) -> bool:
        message = envelope.message
        if message.startswith("now:"):
            self.log.append(f"now {message} in {anyio.get_current_task().name}")
            return True
        if message.startswith("help:"):
            token = _MARK.set(message)  # only while the helper is asked for
            try:
                self.ctx.start_soon(self._helper, message, name="helper")
            finally:
                _MARK.reset(token)
            return True
        return False

    def receive_here(self, envelope: Envelope[str, None]) -> Awaitable[None] | None:
        if self.context is not None and envelope.message.startswith(("stop:", "spawn:")):
            return in_context(self.context, self._here(envelope.message))
        return None

    async def _here(self, message: str) -> None:
        if message.startswith("stop:"):
            await self.ctx.self_ref.stop()
            self.log.append("asked to stop")
            return
        try:
            await self.ctx.spawn(lambda: Sleepy(self.log), name="grandchild")
        except ConfigError as error:
            self.log.append(f"refused: {error}")

    async def _helper(self, message: str) -> None:
        if message == "help:fail":
            raise Boom("the helper failed")
        self.log.append(f"helper {message} in {anyio.get_current_task().name}, mark {_MARK.get()}")

    async def receive(self, message: str) -> None:
        self.log.append(f"receive {message} in {anyio.get_current_task().name}")

    async def on_stop(self) -> None:
        me = current_actor.get()
        self.log.append(f"on_stop as {me.name if me else None}")


class Parent(Actor[Callable[[], Actor[str, None]], ActorRef[str, None]]):
    """Spawns the factory it is asked with as a dormant child named ``child``."""

    def __init__(self, failures: list[ChildFailed]) -> None:
        self.failures = failures

    async def receive(self, message: Callable[[], Actor[str, None]]) -> ActorRef[str, None]:
        return self.ctx.spawn_dormant(message, name="child", restart=RestartPolicy(max_restarts=0))

    async def on_child_failed(self, failure: ChildFailed) -> None:
        self.failures.append(failure)


async def test_it_takes_mail_in_the_senders_task_with_no_task_of_its_own() -> None:
    log: list[str] = []
    async with open_actor_system() as system:
        parent = await system.spawn(lambda: Parent([]), name="parent")
        child = await parent.ask(lambda: Sleepy(log))
        await anyio.wait_all_tasks_blocked()
        assert child.is_alive
        assert tasks_named("actor child") == 0
        await child.send("now:1")
        me = anyio.get_current_task().name
        assert log == [f"now now:1 in {me}"]
        await anyio.wait_all_tasks_blocked()
        assert tasks_named("actor child") == 0  # still no task: nothing needed one
        assert child.dormant
        assert not parent.dormant


async def test_a_queued_message_starts_its_task() -> None:
    log: list[str] = []
    async with open_actor_system() as system:
        parent = await system.spawn(lambda: Parent([]), name="parent")
        child = await parent.ask(lambda: Sleepy(log))
        dormant = [child.dormant]
        await child.send("plain")  # declined in the sender's task: queued
        await anyio.wait_all_tasks_blocked()
        assert log == ["receive plain in actor child"]
        assert tasks_named("actor child") == 1  # an ordinary actor from now on
        assert [*dormant, child.dormant] == [True, False]
        await child.send("now:2")
        assert log[-1].startswith("now now:2 in ")


async def test_a_helper_task_it_asks_for_starts_with_its_task() -> None:
    log: list[str] = []
    async with open_actor_system() as system:
        parent = await system.spawn(lambda: Parent([]), name="parent")
        child = await parent.ask(lambda: Sleepy(log))
        await child.send("help:1")
        await anyio.wait_all_tasks_blocked()
        # started later, with the actor's task, but in the context of the start_soon call
        assert log == ["helper help:1 in helper, mark help:1"]
        assert tasks_named("actor child") == 1


async def test_stopped_before_it_had_a_task_its_on_stop_runs_in_the_stoppers_task() -> None:
    log: list[str] = []
    async with open_actor_system() as system:
        parent = await system.spawn(lambda: Parent([]), name="parent")
        child = await parent.ask(lambda: Sleepy(log))
        await child.stop()
        # on_stop ran before stop() returned, as the child (its own context variables)
        assert log == ["on_stop as child"]
        assert not child.is_alive
        assert not child.dormant
        assert current_actor.get() is None  # the stopper's context is untouched
        with pytest.raises(ActorStopped):
            await child.ask("plain")
        assert tasks_named("actor child") == 0


async def test_it_can_stop_itself_from_a_handler_in_the_senders_task() -> None:
    log: list[str] = []
    async with open_actor_system() as system:
        parent = await system.spawn(lambda: Parent([]), name="parent")
        child = await parent.ask(lambda: Sleepy(log))
        handling = child.send_here("stop:")
        assert handling is not None
        await handling
        assert not child.is_alive  # it takes no more mail
        assert tasks_named("actor child") == 1  # and ends in a task started for that
        with anyio.fail_after(5):
            await child.stop()  # waits for that end
        # it ended in a task of its own (started for that), after the handler
        assert log == ["asked to stop", "on_stop as child"]


async def test_a_failing_helper_fails_it_like_any_actor() -> None:
    log: list[str] = []
    failures: list[ChildFailed] = []
    async with open_actor_system() as system:
        parent = await system.spawn(lambda: Parent(failures), name="parent")
        child = await parent.ask(lambda: Sleepy(log))
        await child.send("help:fail")
        await anyio.wait_all_tasks_blocked()  # its task, the helper, the parent's handler
        assert isinstance(failures[0].error, Boom)
        assert failures[0].child.name == "child"


async def test_its_parents_end_stops_it() -> None:
    log: list[str] = []
    async with open_actor_system() as system:
        parent = await system.spawn(lambda: Parent([]), name="parent")
        child = await parent.ask(lambda: Sleepy(log))
        await parent.stop()
        assert log == ["on_stop as child"]
        assert not child.is_alive
        assert not child.dormant


async def test_the_systems_end_stops_it() -> None:
    log: list[str] = []
    async with open_actor_system() as system:
        parent = await system.spawn(lambda: Parent([]), name="parent")
        child = await parent.ask(lambda: Sleepy(log))
    assert log == ["on_stop as child"]
    assert not child.is_alive


async def test_it_cannot_spawn_children() -> None:
    log: list[str] = []
    async with open_actor_system() as system:
        parent = await system.spawn(lambda: Parent([]), name="parent")
        child = await parent.ask(lambda: Sleepy(log))
        handling = child.send_here("spawn:")
        assert handling is not None
        await handling
        assert len(log) == 1
        assert log[0].startswith("refused: actor 'child' is dormant")
        assert "ctx.spawn()" in log[0]


class AwaitsOnStart(Sleepy):
    async def on_start(self) -> None:
        await anyio.lowlevel.checkpoint()  # a dormant actor has no task to wait in


class RaisesOnStart(Sleepy):
    async def on_start(self) -> None:
        raise Boom("no start")


async def test_an_on_start_that_awaits_is_refused_with_what_to_do() -> None:
    async with open_actor_system() as system:
        parent = await system.spawn(lambda: Parent([]), name="parent")
        with pytest.raises(ConfigError, match=r"on_start awaited.*ctx\.spawn\(\)"):
            await parent.ask(lambda: AwaitsOnStart([]))
        # the parent lives on, and the name is free again
        assert isinstance(await parent.ask(lambda: Sleepy([])), ActorRef)


def broken_factory() -> Actor[str, None]:
    raise Boom("no instance")


@pytest.mark.parametrize("factory", [broken_factory, lambda: RaisesOnStart([])])
async def test_a_factory_or_on_start_that_raises_is_an_actor_failure(
    factory: Callable[[], Actor[str, None]],
) -> None:
    async with open_actor_system() as system:
        parent = await system.spawn(lambda: Parent([]), name="parent")
        with pytest.raises(ActorFailed, match="actor 'child' failed to start") as caught:
            await parent.ask(factory)
        assert isinstance(caught.value.__cause__, Boom)


class SlowStop(Sleepy):
    """An ``on_stop`` that waits (a checkpoint a cancel could land on)."""

    async def on_stop(self) -> None:
        await anyio.lowlevel.checkpoint()
        self.log.append("on_stop done")


@pytest.mark.parametrize("shielded", [False, True])
async def test_stopped_in_a_cancelled_scope_its_on_stop_still_finishes(shielded: bool) -> None:
    # stop() shields a dormant actor's on_stop itself; stop(shielded=True) is for a
    # caller that already stops it inside a shield (a run's end) and makes no scope.
    log: list[str] = []
    scope_init = type(anyio.CancelScope()).__init__.__code__
    made: list[object] = []

    def profile(frame: object, event: str, _: object) -> None:
        if event == "call" and getattr(frame, "f_code", None) is scope_init:
            made.append(frame)

    async with open_actor_system() as system:
        parent = await system.spawn(lambda: Parent([]), name="parent")
        child = await parent.ask(lambda: SlowStop(log))
        with anyio.CancelScope() as outer:
            outer.cancel()
            with anyio.CancelScope(shield=shielded):
                sys.setprofile(profile)
                try:
                    await child.stop(shielded=shielded)
                finally:
                    sys.setprofile(None)
        assert log == ["on_stop done"]
        assert not child.is_alive
        assert len(made) == (0 if shielded else 1)
