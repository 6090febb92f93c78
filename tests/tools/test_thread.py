"""A sync tool body whose caller was cancelled before a thread took it never starts."""

from __future__ import annotations

import anyio
import anyio.from_thread
import anyio.lowlevel
import anyio.to_thread
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from regiment.tools import tool


async def _late_starts(delays: list[int]) -> tuple[int, int]:
    """Call a sync tool ``len(delays)`` times, cancelling each call after that many
    checkpoints; count bodies that started after their cancel had returned."""
    limiter = anyio.to_thread.current_default_thread_limiter()
    limiter.total_tokens = 1  # so one more thread job waits for the abandoned ones
    cancel_returned = False
    late = 0
    started = 0

    @tool
    def body(n: int) -> int:
        """Record when the body starts."""
        nonlocal late, started
        started += 1
        late += cancel_returned
        return n

    for checkpoints in delays:
        cancel_returned = False
        async with anyio.create_task_group() as tg:
            with anyio.CancelScope() as scope:
                tg.start_soon(_cancel_after, checkpoints, scope)
                await body.call({"n": 1}, call_id="c")
            cancel_returned = True
            tg.cancel_scope.cancel()
        # Holds the only thread token: waits until the abandoned job ran or was skipped.
        await anyio.to_thread.run_sync(lambda: None)
    return late, started


async def _cancel_after(checkpoints: int, scope: anyio.CancelScope) -> None:
    for _ in range(checkpoints):
        await anyio.lowlevel.checkpoint()
    scope.cancel()


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
@settings(max_examples=20, deadline=None)
@given(delays=st.lists(st.integers(0, 3), min_size=20, max_size=60))
def test_an_abandoned_call_never_starts_its_body(backend: str, delays: list[int]) -> None:
    late, _ = anyio.run(_late_starts, delays, backend=backend)
    assert late == 0


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_a_call_that_is_not_cancelled_runs_its_body(backend: str) -> None:
    async def main() -> object:
        @tool
        def double(n: int) -> int:
            """Double."""
            return 2 * n

        return (await double.call({"n": 4}, call_id="c")).content

    assert anyio.run(main, backend=backend) == 8


@pytest.mark.anyio
async def test_a_running_body_whose_call_was_given_up_is_listed_until_it_ends() -> None:
    import functools
    import threading
    import time

    from regiment.tools import abandoned_tool_calls

    started, release = threading.Event(), threading.Event()

    @tool
    def hold() -> str:
        """Runs until released."""
        started.set()
        release.wait(30)
        return "done"

    with anyio.move_on_after(30) as scope:
        async with anyio.create_task_group() as tg:
            tg.start_soon(functools.partial(hold.call, {}, call_id="c"))
            await anyio.to_thread.run_sync(started.wait, 30, limiter=anyio.CapacityLimiter(1))
            assert abandoned_tool_calls() == 0  # running, and its caller still waits
            tg.cancel_scope.cancel()
    assert not scope.cancelled_caught
    assert abandoned_tool_calls() == 1  # given up, still running
    release.set()

    def none_left() -> None:  # the body ends on its own: then no longer counted
        while abandoned_tool_calls():
            time.sleep(0.01)

    with anyio.fail_after(30):
        await anyio.to_thread.run_sync(none_left, limiter=anyio.CapacityLimiter(1))


@pytest.mark.anyio
async def test_a_body_left_running_keeps_its_tools_concurrency_token_until_it_ends() -> None:
    # A timed-out or cancelled call gave its token back at once, so with
    # max_concurrency=1 three calls that timed out ran three bodies at the same time.
    import functools
    import threading

    from regiment.tools import Tool, ToolResult

    started, release = anyio.Event(), threading.Event()
    bodies: list[int] = []

    def hold(n: int) -> str:
        """Runs until released."""
        bodies.append(n)
        anyio.from_thread.run_sync(started.set)
        release.wait(30)
        return f"done {n}"

    one_at_a_time = Tool(hold, max_concurrency=1)
    with anyio.CancelScope() as first:  # its caller gives up; the body runs on
        async with anyio.create_task_group() as tg:
            tg.start_soon(functools.partial(one_at_a_time.call, {"n": 1}, call_id="c1"))
            await started.wait()
            first.cancel()
    results: list[ToolResult] = []
    threads = anyio.to_thread.current_default_thread_limiter()
    in_threads = threads.borrowed_tokens  # trio counts the first body's thread till it ends
    async with anyio.create_task_group() as tg:

        async def second() -> None:
            results.append(await one_at_a_time.call({"n": 2}, call_id="c2"))

        tg.start_soon(second)
        await anyio.wait_all_tasks_blocked()
        # The second waits for the first body's token, not for a thread to run it in.
        assert threads.borrowed_tokens == in_threads
        assert bodies == [1]
        release.set()
    assert bodies == [1, 2]
    assert results[0].content == "done 2"


@pytest.mark.anyio
async def test_a_plain_generator_tool_is_read_in_its_thread_within_its_timeout() -> None:
    # Its body ran as pydantic read the generator, on the event loop, after the thread
    # had returned: it blocked every other task, and no timeout could cut it.
    import threading

    release = threading.Event()
    read: list[int] = []

    @tool(timeout=0.05)
    def rows() -> object:
        """Rows, read one at a time."""
        yield 1
        release.wait(30)  # a slow read: the loop must not wait for it
        read.append(2)
        yield 2

    try:
        with anyio.fail_after(10):
            result = await rows.call({}, call_id="c")
        assert read == []  # the slow read had not ended: the timeout came first
    finally:
        release.set()
    assert (result.is_error, result.error_type) == (True, "timeout")

    @tool
    def quick() -> object:
        """Rows, all at once."""
        yield from range(3)

    assert (await quick.call({}, call_id="c")).content == [0, 1, 2]
