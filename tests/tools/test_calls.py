"""Running a tool: errors as results, timeout, retries, limits, threads, cancellation."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from functools import partial

import anyio
import pytest
from pydantic import BaseModel

from regiment._json import JsonObject
from regiment.errors import RetryableToolError, ToolError
from regiment.tools import Tool, Toolset, tool

MAY_HAVE_ACTED = (
    "it had started, so it may have acted (check before calling it again if it changes anything)"
)

pytestmark = pytest.mark.anyio


class Receipt(BaseModel):
    order_id: str
    amount: float


@dataclass
class SleepRecorder:
    """Stands in for anyio.sleep between attempts, so backoff needs no wall clock."""

    delays: list[float]

    async def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)


async def test_an_exception_becomes_an_error_result_without_traceback() -> None:
    @tool
    async def refund(order_id: str) -> str:
        raise ValueError(f"order {order_id} is locked")

    result = await refund.call({"order_id": "7"}, call_id="c")
    assert result.is_error
    assert result.content == "ValueError: order 7 is locked"
    assert result.error_type == "ValueError"
    assert result.attempts == 1


async def test_an_exception_without_message_names_its_type() -> None:
    @tool
    def fail() -> str:
        raise KeyError

    result = await fail.call({}, call_id="c")
    assert (result.content, result.error_type) == ("KeyError", "KeyError")


async def test_return_values_become_json() -> None:
    @tool
    def receipt(order_id: str) -> Receipt:
        return Receipt(order_id=order_id, amount=3.5)

    result = await receipt.call({"order_id": "9"}, call_id="c")
    assert result.content == {"order_id": "9", "amount": 3.5}
    assert result.text == '{"order_id":"9","amount":3.5}'
    assert (result.tool_name, result.call_id, result.is_error) == ("receipt", "c", False)
    assert result.duration_s >= 0


async def test_a_return_value_that_is_not_json_is_an_error_result() -> None:
    @tool
    def handle() -> object:
        return threading.Lock()

    result = await handle.call({}, call_id="c")
    assert result.is_error
    assert result.error_type == "TypeError"
    assert str(result.content).startswith("TypeError: tool 'handle' ran, but returned a lock")


async def test_timeout() -> None:
    never = anyio.Event()

    @tool(timeout=0.02)
    async def stuck() -> str:
        await never.wait()
        return "unreachable"

    result = await stuck.call({}, call_id="c")
    assert result.is_error
    assert result.error_type == "timeout"
    # It said only "timed out after 0.02s": a model may call a refund so cut again.
    assert result.content == f"timed out after 0.02s; {MAY_HAVE_ACTED}"
    assert result.attempts == 1


async def test_timeout_of_a_sync_tool_returns_while_its_thread_still_waits() -> None:
    release = threading.Event()

    @tool(timeout=0.02)
    def stuck() -> str:
        release.wait()
        return "late"

    try:
        result = await stuck.call({}, call_id="c")
    finally:
        release.set()
    assert (result.error_type, result.content) == (
        "timeout",
        f"timed out after 0.02s; {MAY_HAVE_ACTED}",
    )


async def test_retry_then_success() -> None:
    sleeper = SleepRecorder([])
    attempts: list[int] = []

    @tool(retries=3, retry_on=(ConnectionError,), backoff=0.1, sleep=sleeper)
    async def fetch(url: str) -> str:
        attempts.append(len(attempts) + 1)
        if len(attempts) < 3:
            raise ConnectionError("connection reset")
        return f"body of {url}"

    result = await fetch.call({"url": "https://example.test"}, call_id="c")
    assert not result.is_error
    assert result.content == "body of https://example.test"
    assert result.attempts == 3
    assert sleeper.delays == [0.1, 0.2]


async def test_retry_exhausted_reports_the_last_error() -> None:
    sleeper = SleepRecorder([])
    attempts: list[int] = []

    @tool(retries=4, retry_on=(ConnectionError,), backoff=0.1, max_backoff=0.3, sleep=sleeper)
    async def fetch() -> str:
        attempts.append(len(attempts) + 1)
        raise ConnectionError(f"reset on attempt {len(attempts)}")

    result = await fetch.call({}, call_id="c")
    assert result.is_error
    assert result.attempts == 5 == len(attempts)
    assert result.error_type == "ConnectionError"
    assert result.content == "ConnectionError: reset on attempt 5 (after 5 attempts)"
    assert sleeper.delays == [0.1, 0.2, 0.3, 0.3]


async def test_retryable_tool_error_is_retried_without_retry_on() -> None:
    attempts: list[int] = []

    @tool(retries=2, backoff=0)
    def flaky() -> str:
        attempts.append(1)
        if len(attempts) == 1:
            raise RetryableToolError("rate limited")
        return "ok"

    result = await flaky.call({}, call_id="c")
    assert (result.content, result.attempts) == ("ok", 2)


async def test_other_exceptions_are_not_retried() -> None:
    attempts: list[int] = []

    @tool(retries=3, retry_on=(ConnectionError,), backoff=0)
    async def refund() -> str:
        attempts.append(1)
        raise ValueError("amount exceeds the order total")

    result = await refund.call({}, call_id="c")
    assert result.content == "ValueError: amount exceeds the order total"
    assert result.attempts == 1 == len(attempts)


async def test_a_timed_out_attempt_is_retried_when_timeouts_are_retryable() -> None:
    never = anyio.Event()
    attempts: list[int] = []

    @tool(timeout=0.02, retries=1, retry_on=(TimeoutError,), backoff=0)
    async def slow_once() -> str:
        attempts.append(1)
        if len(attempts) == 1:
            await never.wait()
        return "second time lucky"

    result = await slow_once.call({}, call_id="c")
    assert (result.content, result.attempts) == ("second time lucky", 2)


async def test_idempotency_key_from_chosen_arguments() -> None:
    @tool(idempotency_key=("order_id", "amount"))
    def issue_refund(order_id: str, amount: float, note: str = "") -> str:
        return "refunded"

    result = await issue_refund.call({"order_id": "88213", "amount": 10}, call_id="c")
    assert result.idempotency_key == "issue_refund:order_id=88213,amount=10.0"
    invalid = await issue_refund.call({"order_id": "88213"}, call_id="c")
    assert invalid.idempotency_key is None


async def test_idempotency_key_from_a_function() -> None:
    def key(arguments: JsonObject) -> str:
        return f"refund/{arguments['order_id']}"

    @tool(idempotency_key=key)
    def issue_refund(order_id: str) -> str:
        return "refunded"

    result = await issue_refund.call({"order_id": "1"}, call_id="c")
    assert result.idempotency_key == "refund/1"


def _no_order(arguments: JsonObject) -> str:
    raise KeyError("order_id")


def _a_number(arguments: JsonObject) -> str:
    return 42  # type: ignore[return-value]


def _unsure(arguments: JsonObject) -> bool:
    raise ValueError("no limits table")


@pytest.mark.parametrize(
    ("options", "said"),
    [
        (
            {"idempotency_key": _no_order},
            "the idempotency_key function of tool 'pay' raised KeyError: 'order_id'; fix it "
            "to return the key (a str) for the call's arguments",
        ),
        (
            # It was kept as the key: a journaled run's record then could not be read.
            {"idempotency_key": _a_number},
            "the idempotency_key function of tool 'pay' returned the int 42, not the key "
            "(a str); fix it to return a str",
        ),
        (
            {"requires_approval": _unsure},
            "the requires_approval predicate of tool 'pay' raised ValueError: no limits "
            "table; fix it to return True or False for the call's arguments",
        ),
    ],
)
async def test_a_tool_option_function_that_fails_is_named(
    options: dict[str, object], said: str
) -> None:
    # They raised "KeyError: 'order_id'" or "ValueError: ..." naming neither the option
    # nor the tool.
    ran: list[str] = []

    def pay(order_id: str) -> str:
        ran.append(order_id)
        return "paid"

    paying = Tool(pay, **options)  # type: ignore[arg-type]
    with pytest.raises(ToolError) as caught:
        await paying.call({"order_id": "1"}, call_id="c")
    assert str(caught.value) == said
    assert ran == []


class InFlight:
    """Counts calls running at once, all held at a gate until the test opens it."""

    def __init__(self) -> None:
        self.now = 0
        self.peak = 0
        self.gate = anyio.Event()

    async def hold(self) -> None:
        self.now += 1
        self.peak = max(self.peak, self.now)
        try:
            await self.gate.wait()
        finally:
            self.now -= 1


async def test_per_tool_concurrency_limit_under_50_parallel_calls() -> None:
    flight = InFlight()

    @tool(max_concurrency=3)
    async def work(n: int) -> int:
        await flight.hold()
        return n * 2

    results: dict[int, object] = {}

    async def one(n: int) -> None:
        results[n] = (await work.call({"n": n}, call_id=f"c{n}")).content

    async with anyio.create_task_group() as tg:
        for n in range(50):
            tg.start_soon(one, n)
        await anyio.wait_all_tasks_blocked()
        assert flight.now == 3  # the limit is reached, and not passed
        flight.gate.set()
    assert flight.peak == 3
    assert results == {n: n * 2 for n in range(50)}


async def test_tool_set_concurrency_limit_spans_its_tools() -> None:
    flight = InFlight()

    @tool
    async def left(n: int) -> int:
        await flight.hold()
        return n

    @tool(max_concurrency=2)
    async def right(n: int) -> int:
        await flight.hold()
        return -n

    tools = Toolset("pair", [left, right], max_concurrency=4)
    errors: list[object] = []

    async def one(n: int) -> None:
        result = await tools.call("left" if n % 2 else "right", {"n": n}, call_id=f"c{n}")
        if result.is_error:
            errors.append(result.content)

    async with anyio.create_task_group() as tg:
        for n in range(50):
            tg.start_soon(one, n)
        await anyio.wait_all_tasks_blocked()
        assert flight.now == 4
        flight.gate.set()
    assert flight.peak == 4
    assert errors == []


async def test_backoff_does_not_hold_a_concurrency_slot() -> None:
    retrying = anyio.Event()
    resume = anyio.Event()

    async def wait_between_attempts(seconds: float) -> None:
        retrying.set()
        await resume.wait()

    attempts: list[int] = []

    @tool(max_concurrency=1, retries=1, retry_on=(ConnectionError,), sleep=wait_between_attempts)
    async def fetch(first: bool) -> str:
        attempts.append(1)
        if first and len(attempts) == 1:
            raise ConnectionError("reset")
        return "ok"

    async with anyio.create_task_group() as tg:
        tg.start_soon(partial(fetch.call, {"first": True}, call_id="c1"))
        await retrying.wait()
        other = await fetch.call({"first": False}, call_id="c2")  # the slot is free
        resume.set()
    assert other.content == "ok"


async def test_a_sync_tool_does_not_block_the_event_loop() -> None:
    in_thread = anyio.Event()
    release = threading.Event()

    @tool
    def blocking() -> str:
        anyio.from_thread.run_sync(in_thread.set)  # only works from a worker thread
        return "released" if release.wait(timeout=30) else "the event loop never ran"

    async def releaser() -> None:
        await in_thread.wait()  # runs while the tool body is still blocked
        release.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(releaser)
        result = await blocking.call({}, call_id="c")
    assert result.content == "released"


async def test_cancellation_propagates_out_of_call() -> None:
    entered: list[int] = []
    started = anyio.Event()
    finished_call: list[object] = []

    @tool(retries=3, retry_on=(Exception,), backoff=0, timeout=60)
    async def forever() -> str:
        entered.append(1)
        started.set()
        await anyio.Event().wait()
        return "unreachable"

    async def run() -> None:
        finished_call.append(await forever.call({}, call_id="c"))

    async with anyio.create_task_group() as tg:
        tg.start_soon(run)
        await started.wait()
        tg.cancel_scope.cancel()
    assert finished_call == []  # no result: the cancellation went through call
    assert entered == [1]  # and was not retried


async def test_cancellation_propagates_out_of_a_sync_tool_call() -> None:
    in_thread = anyio.Event()
    release = threading.Event()
    finished_call: list[object] = []

    @tool
    def blocking() -> str:
        anyio.from_thread.run_sync(in_thread.set)
        release.wait()
        return "late"

    async def run() -> None:
        finished_call.append(await blocking.call({}, call_id="c"))

    try:
        with anyio.CancelScope() as scope:
            async with anyio.create_task_group() as tg:
                tg.start_soon(run)
                await in_thread.wait()
                scope.cancel()
    finally:
        release.set()
    assert scope.cancelled_caught
    assert finished_call == []


def test_tool_keeps_its_function_and_policy() -> None:
    def lookup(key: str) -> str:
        return key

    made = Tool(lookup, timeout=5, requires_approval=True)
    assert made.function is lookup
    assert made.policy.timeout == 5
    assert made.requires_approval
    assert repr(made) == "Tool('lookup')"


@tool(max_concurrency=1)
async def limited_at_import(n: int) -> int:
    """Defined at import time, so its limit is first used under whichever backend runs first."""
    return n


def test_a_limited_tool_works_under_both_backends_and_successive_event_loops() -> None:
    tools = Toolset("shared", [limited_at_import], max_concurrency=1)
    for backend in ("asyncio", "trio", "asyncio"):
        result = anyio.run(
            partial(tools.call, "limited_at_import", {"n": 3}, call_id="c"), backend=backend
        )
        assert (result.content, result.is_error) == (3, False)
