"""in_context and ContextTurns: a coroutine awaited in one task, every step of it run in
another context."""

from __future__ import annotations

import contextvars
import sys
from collections.abc import Awaitable, Callable
from types import FrameType

import anyio
import pytest

from regiment.actors import ContextTurns, in_context
from regiment.actors import _in_context as module

pytestmark = pytest.mark.anyio

_mark: contextvars.ContextVar[str] = contextvars.ContextVar("test_in_context_mark", default="none")


def _context_with(mark: str) -> contextvars.Context:
    context = contextvars.copy_context()
    context.run(_mark.set, mark)
    return context


async def test_every_step_sees_the_given_context_and_the_task_keeps_its_own() -> None:
    seen: list[str] = []

    async def steps() -> str:
        seen.append(_mark.get())
        await anyio.lowlevel.checkpoint()  # a real trip through the event loop
        seen.append(_mark.get())
        _mark.set("set inside")
        await anyio.lowlevel.checkpoint()
        seen.append(_mark.get())
        return "done"

    _mark.set("the task's")
    context = _context_with("given")
    assert await in_context(context, steps()) == "done"
    assert seen == ["given", "given", "set inside"]
    assert _mark.get() == "the task's"  # the awaiting task's context is untouched
    assert context.run(_mark.get) == "set inside"  # what the coroutine set stays in its context


async def test_an_exception_of_the_coroutine_reaches_the_awaiting_task() -> None:
    async def fails() -> None:
        await anyio.lowlevel.checkpoint()
        raise ValueError("from inside")

    with pytest.raises(ValueError, match="from inside"):
        await in_context(_context_with("given"), fails())


async def test_cancelling_the_awaiting_task_cancels_the_coroutine_in_its_context() -> None:
    cleaned_up_in: list[str] = []

    async def waits_forever() -> None:
        try:
            await anyio.sleep_forever()
        finally:
            cleaned_up_in.append(_mark.get())

    with anyio.move_on_after(0.01) as scope:
        await in_context(_context_with("given"), waits_forever())
    assert scope.cancelled_caught
    assert cleaned_up_in == ["given"]


async def test_context_turns_run_each_coroutine_in_the_context_one_after_another() -> None:
    seen: list[str] = []

    async def steps(n: int) -> None:
        seen.append(f"{n} {_mark.get()}")
        await anyio.lowlevel.checkpoint()
        _mark.set(f"set by {n}")
        seen.append(f"{n} {_mark.get()}")

    _mark.set("the task's")
    context = _context_with("given")
    turns = ContextTurns(context)
    await turns.run(steps(1))
    await turns.run(steps(2))
    assert seen == ["1 given", "1 set by 1", "2 set by 1", "2 set by 2"]
    assert _mark.get() == "the task's"
    assert context.run(_mark.get) == "set by 2"


async def test_context_turns_go_on_after_a_coroutine_raised_or_was_cancelled() -> None:
    cleaned_up_in: list[str] = []
    turns = ContextTurns(_context_with("given"))

    async def fails() -> None:
        await anyio.lowlevel.checkpoint()
        raise ValueError("from inside")

    async def waits_forever() -> None:
        try:
            await anyio.sleep_forever()
        finally:
            cleaned_up_in.append(_mark.get())

    async def reads(into: list[str]) -> None:
        into.append(_mark.get())

    with pytest.raises(ValueError, match="from inside"):
        await turns.run(fails())
    after: list[str] = []
    await turns.run(reads(after))
    with anyio.move_on_after(0.01) as scope:
        await turns.run(waits_forever())
    assert scope.cancelled_caught
    await turns.run(reads(after))
    assert cleaned_up_in == ["given"]
    assert after == ["given", "given"]


async def test_context_turns_end_a_coroutine_with_no_stop_iteration() -> None:
    """A Python ``send`` that ends a coroutine raises StopIteration (~1.6k CPU
    instructions, issue #22); ContextTurns' runner takes the end by ``await``."""
    context = _context_with("given")
    turns = ContextTurns(context)

    async def quick() -> None:
        _mark.get()

    def by_in_context() -> Awaitable[None]:
        return in_context(context, quick())

    def by_turns() -> Awaitable[None]:
        return turns.run(quick())

    assert await _stop_iterations(by_in_context) == 5  # the count sees them
    assert await _stop_iterations(by_turns) == 0


async def _stop_iterations(make: Callable[[], Awaitable[None]]) -> int:
    """Calls from the module's frames that ended in an exception (a StopIteration: nothing
    else raises here) over five coroutines awaited. By the profiler: under a tracer,
    ``await`` itself takes a coroutine's end as a StopIteration."""
    seen = 0

    def profiler(frame: FrameType, event: str, arg: object) -> None:
        nonlocal seen
        seen += event == "c_exception" and frame.f_code.co_filename == module.__file__

    sys.setprofile(profiler)
    try:
        for _ in range(5):
            await make()
    finally:
        sys.setprofile(None)
    return seen
