"""in_context: a coroutine awaited in one task, every step of it run in another context."""

from __future__ import annotations

import contextvars

import anyio
import pytest

from regiment.actors import in_context

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
