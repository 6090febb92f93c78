"""The planner's call runner: calls run one at a time, in order; a call asked for
while one runs goes on in the same task; the task ends when nothing is queued;
closing drops what is queued; a call that leaves a context variable set does
not pass it on; and nothing a call holds outlives it. A run's waiting caller
lends its task to the calls (``Lender``): they run there, as the planner's."""

from __future__ import annotations

import contextvars
import gc
import weakref
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

import anyio
import pytest

from regiment.actors import Actor, ActorSystem, open_actor_system
from regiment.actors._ref import current_actor
from regiment.hierarchy.events import RunFailed
from regiment.hierarchy.run._call_runner import CallRunner
from regiment.hierarchy.run._channel import RunChannel
from regiment.hierarchy.run._lender import Lender
from regiment.hierarchy.run._messages import PlannerMessage

pytestmark = pytest.mark.anyio

_LEFT: contextvars.ContextVar[str] = contextvars.ContextVar("left", default="clean")
_TASK = "planner model calls"


class Host(Actor[PlannerMessage, None]):
    """An actor that only lends its context to a runner."""

    async def on_start(self) -> None:
        self.context = contextvars.copy_context()  # its task's, as a planner's turns run in

    async def receive(self, message: PlannerMessage) -> None:
        pass


def _tasks_named(name: str) -> int:
    return sum(1 for task in anyio.get_running_tasks() if task.name == name)


async def test_calls_asked_for_meanwhile_run_after_it_in_the_same_task() -> None:
    seen: list[tuple[str, int]] = []
    gate = anyio.Event()
    runner: CallRunner | None = None

    def job(name: str, then: str | None = None) -> Callable[[], Coroutine[Any, Any, None]]:
        async def run() -> None:
            if name == "plan":
                await gate.wait()
            seen.append((name, anyio.get_current_task().id))
            if then is not None:  # as a reply's handler asks for the next call
                assert runner is not None
                runner.submit(job(then))

        return run

    host = Host()
    async with open_actor_system() as system:
        await system.spawn(lambda: host, name="planner")
        runner = CallRunner(host.ctx)
        runner.submit(job("plan"))
        runner.submit(job("critique", then="synthesis"))  # queued behind the first
        runner.submit(job("compress"))
        await anyio.wait_all_tasks_blocked()
        assert seen == []
        assert _tasks_named(_TASK) == 1
        gate.set()
        await anyio.wait_all_tasks_blocked()
        assert [name for name, _ in seen] == ["plan", "critique", "compress", "synthesis"]
        assert len({task for _, task in seen}) == 1
        assert _tasks_named(_TASK) == 0  # nothing queued: the task ended
        runner.submit(job("replan"))  # a later call gets a task of its own
        await anyio.wait_all_tasks_blocked()
        runner.close()
    assert seen[-1][0] == "replan"


async def test_close_drops_queued_calls_and_refuses_new_ones() -> None:
    seen: list[str] = []
    gate = anyio.Event()

    async def first() -> None:
        await gate.wait()
        seen.append("first")

    async def later() -> None:
        seen.append("later")

    host = Host()
    async with open_actor_system() as system:
        await system.spawn(lambda: host, name="planner")
        runner = CallRunner(host.ctx)
        runner.submit(first)
        runner.submit(later)
        runner.submit(later)
        await anyio.wait_all_tasks_blocked()
        runner.close()  # the call in hand finishes; the queued ones are dropped
        runner.submit(later)
        gate.set()
        await anyio.wait_all_tasks_blocked()
        assert _tasks_named(_TASK) == 0
    assert seen == ["first"]


async def test_a_call_that_sets_a_context_variable_leaves_it_behind_with_its_task() -> None:
    seen: list[tuple[str, int]] = []

    async def dirty() -> None:
        _LEFT.set("dirty")
        seen.append((_LEFT.get(), anyio.get_current_task().id))

    async def look() -> None:
        seen.append((_LEFT.get(), anyio.get_current_task().id))

    host = Host()
    async with open_actor_system() as system:
        await system.spawn(lambda: host, name="planner")
        runner = CallRunner(host.ctx)
        runner.submit(dirty)
        runner.submit(look)
        runner.submit(look)
        await anyio.wait_all_tasks_blocked()
        runner.close()
    assert [value for value, _ in seen] == ["dirty", "clean", "clean"]
    assert seen[0][1] != seen[1][1]  # a fresh task for the calls after the dirty one
    assert seen[1][1] == seen[2][1]  # which then runs them back to back


async def test_a_call_holds_what_it_hands_its_result_to_only_while_it_runs() -> None:
    class Planner:
        def __init__(self) -> None:
            self.got: list[str] = []

        async def deliver(self, value: str) -> None:
            self.got.append(value)

    host = Host()
    gc.disable()  # no collector pass may be what frees it
    try:
        async with open_actor_system() as system:
            await system.spawn(lambda: host, name="planner")
            runner = CallRunner(host.ctx)
            planner = Planner()
            alive = weakref.ref(planner)

            async def call(deliver: Callable[[str], Awaitable[None]] = planner.deliver) -> None:
                await deliver("reply")

            runner.submit(call)
            del call, planner
            assert alive() is not None  # queued: held
            await anyio.wait_all_tasks_blocked()
            assert alive() is None  # handed its reply, then let go
    finally:
        gc.enable()


# -- a run's caller lends its task (Lender) -----------------------------------------------


def _lent_channel(system: ActorSystem) -> tuple[RunChannel, Lender]:
    """A run's channel whose caller (the test) lends its task, as ``run()`` makes it."""
    lender = Lender(system.new_wakeup())
    channel, events = RunChannel.open(streaming=False, lender=lender)
    events.close()  # run() reads no events
    return channel, lender


def _over(channel: RunChannel) -> None:
    channel.close(RunFailed(run_id="r", error_type="RunError", message="the test is over"))


async def test_a_waiting_caller_runs_the_calls_in_its_own_task_as_the_planners() -> None:
    seen: list[tuple[str, str, str, int]] = []
    host = Host()
    async with open_actor_system() as system:
        await system.spawn(lambda: host, name="planner")
        channel, lender = _lent_channel(system)
        # Made in one of the planner's turns, as PhaseCalls makes it: in its context.
        runner = host.context.run(CallRunner, host.ctx, lender)

        def job(name: str, then: str | None = None) -> Callable[[], Coroutine[Any, Any, None]]:
            async def run() -> None:
                await anyio.lowlevel.checkpoint()
                actor = current_actor.get()
                seen.append((name, actor.name if actor else "-", _LEFT.get(), _tasks_named(_TASK)))
                _LEFT.set(f"left by {name}")
                if then is not None:
                    runner.submit(job(then))
                else:
                    _over(channel)  # the run's end, as a synthesis reply brings it

            return run

        # Asked for as the run starts, before its caller waits: handed over all the same.
        runner.submit(job("plan", then="synthesis"))
        me = anyio.get_current_task().id
        await lender.wait_end(channel)
        assert anyio.get_current_task().id == me
    # Both ran here, one after the other, no task of their own; each as the planner
    # (the sender of what it sends), in a fresh copy of the planner's context.
    assert seen == [("plan", "planner", "clean", 0), ("synthesis", "planner", "clean", 0)]
    assert _LEFT.get() == "clean"  # nothing a call set reaches the caller


async def test_a_caller_cancelled_mid_call_hands_the_queued_calls_back_to_a_task() -> None:
    seen: list[tuple[str, str]] = []
    started = anyio.Event()
    host = Host()
    async with open_actor_system() as system:
        await system.spawn(lambda: host, name="planner")
        channel, lender = _lent_channel(system)
        runner = CallRunner(host.ctx, lender)

        async def slow() -> None:
            started.set()
            try:
                await anyio.sleep_forever()
            finally:
                seen.append(("slow, cut short", anyio.get_current_task().name or ""))

        async def after() -> None:
            seen.append(("after", anyio.get_current_task().name or ""))

        runner.submit(slow)
        runner.submit(after)
        caller = anyio.CancelScope()
        async with anyio.create_task_group() as tg:

            async def wait() -> None:
                with caller:
                    await lender.wait_end(channel)

            tg.start_soon(wait, name="the caller")
            await started.wait()
            caller.cancel()
        await anyio.wait_all_tasks_blocked()
        runner.close()
        _over(channel)
    assert seen == [("slow, cut short", "the caller"), ("after", _TASK)]


async def test_a_lent_call_that_raises_fails_the_planner_not_its_caller() -> None:
    made: list[Host] = []

    def host() -> Host:
        made.append(Host())
        return made[-1]

    async with open_actor_system() as system:
        await system.spawn(host, name="planner")  # restarted after a failure
        channel, lender = _lent_channel(system)
        runner = CallRunner(made[0].ctx, lender)

        async def broken() -> None:
            raise ValueError("a bug in a reply's handler")

        async def then_over() -> None:
            _over(channel)

        runner.submit(broken)
        runner.submit(then_over)
        await lender.wait_end(channel)  # does not raise
        await anyio.wait_all_tasks_blocked()
    assert len(made) == 2  # the planner failed (in a task of its own) and was restarted
