"""A retry never starts a sync body beside the timed-out attempt's body that still runs.

A payment API that hangs, behind a sync tool with ``timeout`` and ``retry_on=(TimeoutError,)``:
Python cannot stop the thread of the timed-out attempt, so its body goes on (and may pay).
A retry started at once ran a second body beside it, with the same idempotency key: two
payments in flight at once, which a provider's key check can let both through. The retry
now waits for the left-running body to end, as a call waiting for a slot of the tool's
``max_concurrency`` does.
"""

from __future__ import annotations

import functools
import logging
import threading

import anyio
import pytest

from regiment.tools import abandoned_tool_calls, tool


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_a_retry_waits_for_the_timed_out_body_still_running(backend: str) -> None:
    lock = threading.Lock()
    running = [0]
    beside: list[int] = []  # for each body, how many others ran as it started
    retry_started = threading.Event()

    @tool(timeout=0.05, retries=2, retry_on=(TimeoutError,), backoff=0)
    def pay(order: str) -> str:
        """Pay an order; the first attempt hangs past the timeout."""
        with lock:
            beside.append(running[0])
            running[0] += 1
            first = len(beside) == 1
        if first:
            retry_started.wait(0.3)  # hangs; a retry started beside it frees it at once
        else:
            retry_started.set()
        with lock:
            running[0] -= 1
        return f"paid {order}"

    async def main() -> tuple[object, int]:
        result = await pay.call({"order": "5"}, call_id="c")
        return result.content, result.attempts

    content, attempts = anyio.run(main, backend=backend)
    assert beside == [0, 0]  # the retry started only once the first body had ended
    assert (content, attempts) == ("paid 5", 2)
    assert abandoned_tool_calls() == 0


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_a_cancel_while_the_retry_waits_ends_the_call_at_once(backend: str) -> None:
    release = threading.Event()
    bodies: list[int] = []

    @tool(timeout=0.05, retries=1, retry_on=(TimeoutError,), backoff=0)
    def pay(order: str) -> str:
        """Pay; every attempt hangs until released."""
        bodies.append(1)
        release.wait(5)
        return "paid"

    timed_out = threading.Event()  # the WARNING that the first body runs on is logged
    handler = _Notice(timed_out)

    async def main() -> bool:
        with anyio.CancelScope() as scope:
            async with anyio.create_task_group() as tg:
                tg.start_soon(functools.partial(pay.call, {"order": "5"}, call_id="c"))
                await anyio.to_thread.run_sync(timed_out.wait)
                await anyio.wait_all_tasks_blocked()
                scope.cancel()  # the call waits for the first body: the cancel ends it
        release.set()
        return scope.cancelled_caught

    logger = logging.getLogger("regiment.tools")
    logger.addHandler(handler)
    try:
        assert anyio.run(main, backend=backend)
    finally:
        logger.removeHandler(handler)
    assert len(bodies) == 1  # the retry never started


class _Notice(logging.Handler):
    """Sets an event when a tool body is left running (its WARNING on regiment.tools)."""

    def __init__(self, event: threading.Event) -> None:
        super().__init__(logging.WARNING)
        self.event = event

    def emit(self, record: logging.LogRecord) -> None:
        if "runs to its end unseen" in record.getMessage():
            self.event.set()
