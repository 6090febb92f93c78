"""A retry never starts a sync body beside the timed-out attempt's body that still runs.

A payment API that hangs, behind a sync tool with ``timeout`` and ``retry_on=(TimeoutError,)``:
Python cannot stop the thread of the timed-out attempt, so its body goes on (and may pay).
A retry started at once ran a second body beside it, with the same idempotency key: two
payments in flight at once, which a provider's key check can let both through. The retry
now waits for the left-running body to end, up to the timeout once more; a body still
running then ends the call with an error saying so (the model decides what to do).
"""

from __future__ import annotations

import functools
import logging
import threading

import anyio
import pytest

from regiment.tools import abandoned_tool_calls, tool


class _Bodies:
    """Records, for each body, how many others ran as it started."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.running = 0
        self.beside: list[int] = []
        self.retry_started = threading.Event()

    def enter(self) -> bool:
        """Whether this is the first body; a later one frees the first at once."""
        with self.lock:
            self.beside.append(self.running)
            self.running += 1
            first = len(self.beside) == 1
        if not first:
            self.retry_started.set()
        return first

    def leave(self) -> None:
        with self.lock:
            self.running -= 1


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_a_retry_waits_for_the_timed_out_body_to_end(backend: str) -> None:
    bodies = _Bodies()

    @tool(timeout=0.25, retries=2, retry_on=(TimeoutError,), backoff=0)
    def pay(order: str) -> str:
        """Pay an order; the first attempt ends a little after its timeout."""
        if bodies.enter():
            bodies.retry_started.wait(0.3)  # a retry started beside it frees it at once
        bodies.leave()
        return f"paid {order}"

    async def main() -> tuple[object, int]:
        result = await pay.call({"order": "5"}, call_id="c")
        return result.content, result.attempts

    content, attempts = anyio.run(main, backend=backend)
    assert bodies.beside == [0, 0]  # the retry started only once the first body had ended
    assert (content, attempts) == ("paid 5", 2)
    assert abandoned_tool_calls() == 0


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_a_body_that_runs_on_past_the_timeout_again_is_not_retried_beside(backend: str) -> None:
    bodies = _Bodies()
    release = threading.Event()

    @tool(timeout=0.05, retries=2, retry_on=(TimeoutError,), backoff=0)
    def pay(order: str) -> str:
        """Pay an order; the first attempt hangs until a retry starts or the test ends."""
        if bodies.enter():
            while not (bodies.retry_started.is_set() or release.is_set()):
                bodies.retry_started.wait(0.01)
        bodies.leave()
        return f"paid {order}"

    async def main() -> tuple[object, int, bool]:
        result = await pay.call({"order": "5"}, call_id="c")
        release.set()
        return result.content, result.attempts, result.is_error

    content, attempts, is_error = anyio.run(main, backend=backend)
    assert bodies.beside == [0]  # no second body
    assert is_error
    assert attempts == 1
    assert "its body still runs in its thread" in str(content)
    assert "so it was not tried again beside it" in str(content)
    assert "it had started, so it may have acted" in str(content)


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_a_cancel_while_the_retry_waits_ends_the_call_at_once(backend: str) -> None:
    release = threading.Event()
    bodies: list[int] = []

    @tool(timeout=1.0, retries=1, retry_on=(TimeoutError,), backoff=0)
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
