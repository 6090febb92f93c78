"""An actor's ``stopped`` signal (a flag and a wake-up per waiter), and what the
mail loop keeps alive: nothing of a message once it has been handled."""

from __future__ import annotations

import gc
import weakref

import anyio
import pytest

from regiment.actors import Actor, open_actor_system
from regiment.actors._stopped import Stopped

pytestmark = pytest.mark.anyio


class Parcel:
    """A message that can be watched with a weak reference."""


class Sink(Actor[Parcel, None]):
    async def receive(self, message: Parcel) -> None:
        pass


async def test_every_waiter_wakes_when_it_is_set_and_later_waits_return_at_once() -> None:
    async with open_actor_system() as system:
        stopped = Stopped(system.new_wakeup, system.checkpoint)
        woken: list[int] = []

        async def wait(index: int) -> None:
            await stopped.wait()
            woken.append(index)

        async with anyio.create_task_group() as tg:
            for index in range(3):
                tg.start_soon(wait, index)
            await anyio.wait_all_tasks_blocked()
            assert woken == []
            assert not stopped.done
            stopped.set()
            stopped.set()  # idempotent
        assert sorted(woken) == [0, 1, 2]
        assert stopped.done
        await stopped.wait()


async def test_a_cancelled_waiter_leaves_and_the_others_still_wake() -> None:
    async with open_actor_system() as system:
        stopped = Stopped(system.new_wakeup, system.checkpoint)
        woken: list[str] = []

        async def wait(name: str, scope: anyio.CancelScope) -> None:
            with scope:
                await stopped.wait()
                woken.append(name)

        gone, stays = anyio.CancelScope(), anyio.CancelScope()
        async with anyio.create_task_group() as tg:
            tg.start_soon(wait, "gone", gone)
            tg.start_soon(wait, "stays", stays)
            await anyio.wait_all_tasks_blocked()
            gone.cancel()
            await anyio.wait_all_tasks_blocked()
            assert gone.cancelled_caught
            assert len(stopped._waiters) == 1  # the cancelled one's wake-up left the list
            stopped.set()
        assert woken == ["stays"]


async def test_waiting_on_a_stopped_actor_is_still_a_checkpoint() -> None:
    async with open_actor_system() as system:
        stopped = Stopped(system.new_wakeup, system.checkpoint)
        stopped.set()
        with anyio.CancelScope() as scope:
            scope.cancel()
            await stopped.wait()
            pytest.fail("a cancelled wait returned")  # pragma: no cover
        assert scope.cancelled_caught


async def test_ref_stop_returns_once_the_actor_has_stopped() -> None:
    async with open_actor_system() as system:
        ref = await system.spawn(Sink, name="sink")
        await ref.stop()
        assert not ref.is_alive
        await ref.stop()  # a second stop of a stopped actor returns too


async def test_the_mail_loop_does_not_keep_a_handled_message_alive() -> None:
    async with open_actor_system() as system:
        ref = await system.spawn(Sink, name="sink")
        parcel = Parcel()
        watched = weakref.ref(parcel)
        await ref.send(parcel)
        del parcel
        await anyio.wait_all_tasks_blocked()  # handled; the actor waits for more mail
        gc.collect()
        assert watched() is None
        asked = Parcel()
        watched = weakref.ref(asked)
        await ref.ask(asked)
        del asked
        await anyio.wait_all_tasks_blocked()
        gc.collect()
        assert watched() is None
