"""The runtime's wake-up primitive: no lost wakes, anyio cancel-scope semantics."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import anyio
import anyio.lowlevel
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from regiment.actors import Wakeup
from regiment.actors._wakeup import loop_checkpoint_if_cancelled, wakeup_factory
from regiment.errors import ConfigError

pytestmark = pytest.mark.anyio

Outcome = Literal["woken", "cancelled"]


async def _wait(wakeup: Wakeup, outcomes: list[Outcome], scopes: list[anyio.CancelScope]) -> None:
    with anyio.CancelScope() as scope:
        scopes.append(scope)
        await wakeup.wait()
        outcomes.append("woken")
        return
    outcomes.append("cancelled")


async def _returns_at_once(wakeup: Wakeup) -> bool:
    """Whether a fresh wait returns without a wake (a wake was left over)."""
    outcomes: list[Outcome] = []
    async with anyio.create_task_group() as tg:
        tg.start_soon(_wait, wakeup, outcomes, [])
        await anyio.wait_all_tasks_blocked()
        at_once = outcomes == ["woken"]
        if not at_once:
            wakeup.wake()
    return at_once


async def test_a_wake_resumes_a_parked_waiter() -> None:
    wakeup = wakeup_factory()()
    outcomes: list[Outcome] = []
    async with anyio.create_task_group() as tg:
        tg.start_soon(_wait, wakeup, outcomes, [])
        await anyio.wait_all_tasks_blocked()
        assert outcomes == []  # really parked
        wakeup.wake()
    assert outcomes == ["woken"]


async def test_a_wake_before_the_wait_is_remembered_once() -> None:
    wakeup = wakeup_factory()()
    wakeup.wake()
    wakeup.wake()  # two remembered wakes are one
    with anyio.fail_after(5):
        await wakeup.wait()  # returns at once
    outcomes: list[Outcome] = []
    async with anyio.create_task_group() as tg:
        tg.start_soon(_wait, wakeup, outcomes, [])
        await anyio.wait_all_tasks_blocked()
        assert outcomes == []  # the second wake was not kept as another one
        wakeup.wake()
    assert outcomes == ["woken"]


async def test_a_remembered_wake_returns_without_a_checkpoint() -> None:
    wakeup = wakeup_factory()()
    wakeup.wake()
    passed: list[str] = []
    with anyio.CancelScope() as scope:
        scope.cancel()
        await wakeup.wait()  # not a checkpoint: the cancel is not raised here
        passed.append("wait")
        await anyio.lowlevel.checkpoint()  # this one raises it
        passed.append("checkpoint")
    assert passed == ["wait"]
    assert scope.cancelled_caught


async def test_a_cancelled_waiter_raises_the_backends_cancellation() -> None:
    wakeup = wakeup_factory()()
    raised: list[type[BaseException]] = []

    async def waiter() -> None:
        try:
            await wakeup.wait()
        except BaseException as exc:
            raised.append(type(exc))
            raise

    async with anyio.create_task_group() as tg:
        tg.start_soon(waiter)
        await anyio.wait_all_tasks_blocked()
        tg.cancel_scope.cancel()
    assert raised == [anyio.get_cancelled_exc_class()]


async def test_a_deadline_ends_a_wait_and_the_wakeup_is_reusable() -> None:
    wakeup = wakeup_factory()()
    with anyio.move_on_after(0.01) as scope:
        await wakeup.wait()
    assert scope.cancelled_caught
    outcomes: list[Outcome] = []
    async with anyio.create_task_group() as tg:
        tg.start_soon(_wait, wakeup, outcomes, [])
        await anyio.wait_all_tasks_blocked()
        wakeup.wake()
    assert outcomes == ["woken"]


async def test_a_wake_landing_on_a_cancelled_wait_goes_to_the_next_wait() -> None:
    wakeup = wakeup_factory()()
    outcomes: list[Outcome] = []
    scopes: list[anyio.CancelScope] = []
    async with anyio.create_task_group() as tg:
        tg.start_soon(_wait, wakeup, outcomes, scopes)
        await anyio.wait_all_tasks_blocked()
        scopes[0].cancel()  # the cancel comes first ...
        wakeup.wake()  # ... so the waiter is cancelled and this wake is kept
    assert outcomes == ["cancelled"]
    assert await _returns_at_once(wakeup)


async def test_a_cancel_landing_on_a_woken_wait_does_not_undo_the_wake() -> None:
    wakeup = wakeup_factory()()
    outcomes: list[Outcome] = []
    scopes: list[anyio.CancelScope] = []
    async with anyio.create_task_group() as tg:
        tg.start_soon(_wait, wakeup, outcomes, scopes)
        await anyio.wait_all_tasks_blocked()
        wakeup.wake()  # the wake comes first: the wait returns ...
        scopes[0].cancel()  # ... and the cancel waits for the next checkpoint
    assert outcomes == ["woken"]
    assert not await _returns_at_once(wakeup)  # the wake was used: nothing is left over


async def test_two_tasks_cannot_wait_on_one_wakeup() -> None:
    wakeup = wakeup_factory()()
    async with anyio.create_task_group() as tg:
        tg.start_soon(wakeup.wait)
        await anyio.wait_all_tasks_blocked()
        with pytest.raises(ConfigError, match="give each task its own"):
            await wakeup.wait()
        wakeup.wake()


# -- property: any interleaving of wakes, waits and cancels --------------------

Op = Literal["wake", "wait", "cancel", "settle"]


@dataclass
class _Model:
    """What the contract says happens: a wake resumes a parked waiter or is remembered."""

    waiter: Literal["none", "parked", "woken", "cancelled"] = "none"
    remembered: bool = False
    outcomes: list[Outcome] = field(default_factory=list)

    def wake(self) -> None:
        if self.waiter == "parked":
            self.waiter = "woken"
        else:
            self.remembered = True

    def cancel(self) -> None:
        if self.waiter == "parked":
            self.waiter = "cancelled"

    def settle(self) -> None:
        if self.waiter in ("woken", "cancelled"):
            self.outcomes.append("woken" if self.waiter == "woken" else "cancelled")
            self.waiter = "none"

    def wait(self) -> None:
        self.settle()
        if self.waiter == "parked":
            return  # one waiter at a time: the test starts no second one
        if self.remembered:
            self.remembered = False
            self.outcomes.append("woken")
        else:
            self.waiter = "parked"


async def _replay(ops: list[Op]) -> tuple[list[Outcome], list[Outcome], bool, bool]:
    wakeup = wakeup_factory()()
    model = _Model()
    outcomes: list[Outcome] = []
    scopes: list[anyio.CancelScope] = []
    async with anyio.create_task_group() as tg:
        for op in ops:
            if op == "wake":
                wakeup.wake()
                model.wake()
            elif op == "cancel":
                if scopes:
                    scopes[-1].cancel()
                model.cancel()
            elif op == "settle":
                await anyio.wait_all_tasks_blocked()
                model.settle()
            else:
                await anyio.wait_all_tasks_blocked()
                if model.waiter in ("none", "woken", "cancelled"):
                    tg.start_soon(_wait, wakeup, outcomes, scopes)
                    await anyio.wait_all_tasks_blocked()
                model.wait()
        await anyio.wait_all_tasks_blocked()
        model.settle()
        if model.waiter == "parked":
            scopes[-1].cancel()
            model.cancel()
            await anyio.wait_all_tasks_blocked()
            model.settle()
    return outcomes, model.outcomes, await _returns_at_once(wakeup), model.remembered


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
@settings(max_examples=200, deadline=None)
@given(ops=st.lists(st.sampled_from(["wake", "wait", "cancel", "settle"]), max_size=24))
def test_wakes_are_never_lost_in_any_interleaving(backend: str, ops: list[Op]) -> None:
    outcomes, expected, left_over, remembered = anyio.run(_replay, ops, backend=backend)
    assert outcomes == expected
    assert left_over == remembered


async def test_the_found_once_cancel_check_acts_as_anyios() -> None:
    """``loop_checkpoint_if_cancelled`` (the backend found once) raises in a cancelled
    scope, even a scope cancelled around a shield's parent, and not in a shielded one."""
    check = loop_checkpoint_if_cancelled()
    passed: list[str] = []
    await check()  # nothing cancelled: returns
    passed.append("open")
    with anyio.CancelScope() as outer:
        outer.cancel()
        with anyio.CancelScope(shield=True):
            await check()  # shielded from the cancelled parent
            passed.append("shielded")
        with anyio.CancelScope():
            await check()  # an open scope inside the cancelled one: cancelled too
            passed.append("inner")  # pragma: no cover - never reached
    assert outer.cancelled_caught
    assert passed == ["open", "shielded"]
