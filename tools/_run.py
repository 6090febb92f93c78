"""Running a tool body under its policy: limits, timeout, retries; and asking approval."""

from __future__ import annotations

import inspect
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from typing import assert_never

import anyio
import msgspec
from anyio.lowlevel import RunVar
from opentelemetry import trace

from regiment._json import JsonObject
from regiment._stray import stray, stray_reason
from regiment.errors import ApprovalError, RegimentError
from regiment.tools._approval import (
    ApprovalDecision,
    ApprovalRequest,
    Approve,
    Approver,
    Deny,
    EditArguments,
    NotADecision,
    ask_approver,
)
from regiment.tools._outcome import NotJson, error_result, jsonable
from regiment.tools._policy import ToolPolicy
from regiment.tools._result import ToolResult
from regiment.tools._thread import HeldTokens, LeftRunning, held_tokens, left_running

__all__ = (
    "Attempted",
    "LoopLimiter",
    "TimedOut",
    "ToolExited",
    "ToolRaisedBase",
    "call_result",
    "describe_failure",
    "request_approval",
    "run_attempts",
)

_log = logging.getLogger("regiment.tools")


class TimedOut(TimeoutError):
    """An attempt ran past the tool's timeout (never escapes the tools room).

    ``left`` says whether its sync body runs on in its thread, for a retry to wait for.
    """

    def __init__(self, seconds: float, left: LeftRunning | None = None, note: str = "") -> None:
        super().__init__(f"timed out after {float(seconds)}s{note}")
        self.seconds, self.left = seconds, left


_RUNS_ON = (
    "; its body still runs in its thread (a sync tool's cannot be stopped), so it was not "
    "tried again beside it"
)


class ToolExited(Exception):
    """A tool body raised ``SystemExit`` (``sys.exit()``): one failed call, not the end of
    the process every other run shares (never escapes the tools room)."""

    def __init__(self, exit: SystemExit) -> None:
        super().__init__(
            f"the tool called sys.exit({exit.code!r}); a tool cannot end the process, "
            "so this call failed"
        )


class ToolRaisedBase(Exception):
    """A tool body raised a ``BaseException`` that is neither a cancellation of its call
    nor an interrupt: asyncio's ``CancelledError`` with nothing cancelling the call (or
    on trio), ``GeneratorExit``, ... One failed call, not a worker gone (never escapes
    the tools room)."""

    def __init__(self, raised: BaseException) -> None:
        self.kind = type(raised).__name__
        super().__init__(
            f"the tool {stray_reason(raised)}; a tool must not raise it itself (raise an "
            "Exception, such as TimeoutError or RuntimeError)"
        )


class LoopLimiter:
    """A concurrency limit that works under whichever event loop calls it.

    An anyio ``CapacityLimiter`` belongs to the backend it was first used on, but a
    tool is a value that may be defined at import time and called from asyncio in
    one test and trio in the next; so the limiter lives in a ``RunVar``, one per
    running event loop.
    """

    __slots__ = ("_total", "_var")

    def __init__(self, total: int) -> None:
        self._total = total
        self._var: RunVar[anyio.CapacityLimiter] = RunVar("regiment.tools.limiter")

    def current(self) -> anyio.CapacityLimiter:
        """The limiter for the running event loop."""
        limiter = self._var.get(None)
        if limiter is None:
            limiter = anyio.CapacityLimiter(self._total)
            self._var.set(limiter)
        return limiter


class Attempted(msgspec.Struct, frozen=True):
    """How the attempts ended: a value, or the last attempt's exception."""

    value: object
    error: Exception | None
    attempts: int


async def run_attempts(
    invoke: Callable[[], Awaitable[object]],
    policy: ToolPolicy,
    limiters: Sequence[LoopLimiter],
    after: int = 0,
) -> Attempted:
    """Call ``invoke`` until it succeeds, fails for good, or the retries run out.

    Each attempt holds a token of every limiter while it runs; the backoff wait
    between attempts holds none, so a retrying call does not starve the others.
    A retry after a timeout whose sync body runs on waits for that body to end.
    ``after``: attempts already made (and failed retryably) by the caller.
    """
    attempt = after
    if after:
        await policy.sleep(policy.backoff_delay(after))
    while True:
        attempt += 1
        try:
            if limiters:
                async with _holding(limiters):
                    value = await _within(policy.timeout, invoke, attempt <= policy.retries)
            elif policy.timeout is None:  # the usual tool: nothing to hold, no deadline
                value = await invoke()
            else:
                value = await _within(policy.timeout, invoke, attempt <= policy.retries)
        except Exception as exc:
            if attempt > policy.retries or not policy.is_retryable(exc):
                return Attempted(None, exc, attempt)
            # (not the exception itself: its traceback holds this frame)
            runs_on = (exc.seconds, exc.left) if isinstance(exc, TimedOut) and exc.left else None
        except SystemExit as exc:  # never retried: the body meant to stop
            return Attempted(None, ToolExited(exc), attempt)
        except BaseException as exc:  # a cancellation or an interrupt, as a rule
            if not stray(exc):
                raise
            return Attempted(None, ToolRaisedBase(exc), attempt)
        else:
            return Attempted(value, None, attempt)
        if runs_on is not None and runs_on[1].why:  # runs on unseen: never a second beside it
            _log.warning("a timed-out tool call was not tried again: %s", runs_on[1].why)
            return Attempted(None, TimedOut(runs_on[0], note=f"; {runs_on[1].why}"), attempt)
        await policy.sleep(policy.backoff_delay(attempt))
        # A sync body that timed out may run on: never a second one beside it. It gets the
        # timeout once more to end; one still running then ends the call (the model decides).
        if runs_on is not None and not await runs_on[1].ended_within(runs_on[0]):
            return Attempted(None, TimedOut(runs_on[0], note=_RUNS_ON), attempt)


async def _within(
    seconds: float | None, invoke: Callable[[], Awaitable[object]], retried: bool
) -> object:
    if seconds is None:
        return await invoke()
    if not retried:  # no retry to hold back: nothing to watch (a call pays for it only then)
        with anyio.move_on_after(seconds):
            return await invoke()
        raise TimedOut(seconds)
    left = LeftRunning()
    token = left_running.set(left)  # a sync body the deadline cuts says so here
    try:
        with anyio.move_on_after(seconds):
            return await invoke()
    finally:
        left_running.reset(token)
    # Only our own deadline gets here; an outer cancellation propagates through the scope.
    raise TimedOut(seconds, left)


@asynccontextmanager
async def _holding(limiters: Sequence[LoopLimiter]) -> AsyncIterator[None]:
    # A fresh borrower per attempt: a tool body that calls another tool of the same
    # set from the same task must not look like a task taking a second token.
    held = HeldTokens()
    token = held_tokens.set(held)
    try:
        for limit in limiters:
            limiter = limit.current()
            await limiter.acquire_on_behalf_of(held.borrower)
            held.limiters.append(limiter)
        yield
    finally:
        held_tokens.reset(token)
        if not held.kept:  # else a sync body left running gives them back as it ends
            held.release()


def call_result(
    name: str, attempted: Attempted, call_id: str, sent: JsonObject, key: str | None
) -> ToolResult:
    """The call's result: its value as JSON data, or the error the model reads."""
    if attempted.error is not None:
        if not isinstance(attempted.error, TimedOut):
            # The traceback is only here; the worker logs the failure with its step.
            _log.debug("tool %r raised", name, exc_info=attempted.error)
        message, error_type = describe_failure(attempted.error, attempted.attempts)
        return error_result(name, call_id, message, error_type, sent, key, attempted.attempts)
    try:  # text, the usual value, as it is: no call (#22)
        value = attempted.value
        content = value if isinstance(value, str) else jsonable(value)
    except NotJson:
        kind = _a_kind(type(attempted.value).__name__)
        # It ran: say so, or a model that reads "failed" may call it (and its side
        # effect) again; the fix is the tool's, so say what it must return.
        message = (
            f"TypeError: tool {name!r} ran, but returned {kind}, not JSON data, so its "
            "result cannot be shown (a tool returns text, numbers, lists, dicts or "
            "pydantic models)"
        )
        if inspect.iscoroutine(attempted.value):  # an async call it did not await
            attempted.value.close()  # never run: no "was never awaited" warning later
            message += "; it called an async function without awaiting it: make the tool async"
        n = attempted.attempts
        return error_result(name, call_id, message, "TypeError", sent, key, n)
    return ToolResult(
        call_id=call_id,
        tool_name=name,
        content=content,
        attempts=attempted.attempts,
        idempotency_key=key,
        arguments=sent,
    )


def _a_kind(kind: str) -> str:
    """``kind`` as a value of it is named: "bytes", "an object", "a lock"."""
    if kind in ("bytes", "bytearray"):  # "returned a bytes" reads wrong
        return kind
    return f"{'an' if kind[:1].lower() in 'aeiou' else 'a'} {kind}"


_MAY_HAVE_ACTED = (
    "it had started, so it may have acted (check before calling it again if it changes anything)"
)


def describe_failure(exc: Exception, attempts: int) -> tuple[str, str]:
    """The message the model reads for a failed call, and its ``error_type``."""
    if isinstance(exc, TimedOut):
        # It had started: a model told only "timed out" may call a refund again.
        message, error_type = f"{exc}; {_MAY_HAVE_ACTED}", "timeout"
    elif isinstance(exc, ToolExited):
        message, error_type = f"SystemExit: {exc}", "SystemExit"
    elif isinstance(exc, ToolRaisedBase):
        message, error_type = f"{exc.kind}: {exc}", exc.kind
    else:
        error_type = type(exc).__name__
        message = f"{error_type}: {exc}" if str(exc) else error_type
    if attempts > 1:
        message += f" (after {attempts} attempts)"
    return message, error_type


_DECIDES = (
    "an approver (Toolset(approver=...)) is a function (async, or plain: it runs in a "
    "thread) that returns Approve(), Deny(reason=...) or EditArguments(arguments=...), "
    "or raises to fail the step"
)


async def request_approval(approver: Approver, request: ApprovalRequest) -> ApprovalDecision:
    """Ask ``approver``, recording the wait as events on the current span."""
    span = trace.get_current_span()
    about = {"gen_ai.tool.name": request.tool_name, "gen_ai.tool.call.id": request.call_id}
    span.add_event("regiment.approval.requested", about)
    try:
        decision = await ask_approver(approver, request)
    except RegimentError:  # ours (a journal's, a desk's): it says what happened
        raise
    except NotADecision as exc:  # its answer (the check is ask_approver's)
        raise ApprovalError(
            f"the approver of tool {request.tool_name!r} {exc.what}; {_DECIDES}", kind="approver"
        ) from None
    except Exception as exc:  # the application's code: the step fails saying whose
        raise ApprovalError(
            f"the approver of tool {request.tool_name!r} raised {type(exc).__name__}: {exc}; "
            f"{_DECIDES}",
            kind="approver",
        ) from exc
    except BaseException as exc:
        if stray(exc):  # its own CancelledError must not end the worker (regiment._stray)
            raise ApprovalError(
                f"the approver of tool {request.tool_name!r} {stray_reason(exc)}; {_DECIDES}",
                kind="approver",
            ) from exc
        # Cut short undecided (its run paused, or was cancelled): the body never ran. The
        # call's events say `awaiting_approval`; so does its span, not just `cancelled`.
        if isinstance(exc, anyio.get_cancelled_exc_class()) and span.is_recording():
            span.set_attribute("regiment.tool.outcome", "awaiting_approval")
        raise
    span.add_event(
        "regiment.approval.decided", {**about, "regiment.approval.decision": _word(decision)}
    )
    return decision


def _word(decision: ApprovalDecision) -> str:
    match decision:
        case Approve():
            return "approve"
        case Deny():
            return "deny"
        case EditArguments():
            return "edit"
        case _:
            assert_never(decision)
